import Foundation

/// Fixed keys for the fuzz targets (generated once with openssl genpkey; not secret, used nowhere else).
/// Seeds made by `FUZZ_WRITE_SEEDS` are sealed to them, so the fuzzer starts from inputs that open.
public enum FixedKeys {
    /// The RSA-2048 private key (PKCS#8 PEM).
    public static let rsa = """
    -----BEGIN PRIVATE KEY-----
    MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDPVZkbaxK+qKJB
    GO5g0ADAXWVCA/KHrquGTZnWiLRyX5Yb9kfQdgnJpIxEsU8ebC3mQLUOUA7TUKCh
    H+oKmJbBI8ti+Op3hqvDVwg9wPINXSb3sTk7A86V4PmFbvxDjTwTnrbXiiTJ/mk5
    KwbWm4OzE5QPZssmh50X3EFiAF64/C6PXJ8+E7QCmrXrmV9gkv42xtajrT/boBCi
    B32rkngt8Ic3A0bDzxR6kuljDSDjRQM/6bSKXNTBbrcefc6GpBXIAUTRA+0jhnZE
    dP1INrAtuPFEbPQE6x0zO9t+tuedNB0fjLy74/v696UIZuC8uwcRDTYo5ElKcour
    Yk6cqwpRAgMBAAECggEAAiEN5nMuCRkwOVzpLcNVDqSm4oup1OzdRA7N8p8Kw1Xp
    87WOvTxJE3IGIrpzZouT2RZ3BYOa816Tl7P9Mkio26jjcMu/lKSkZOgi5IdztOFt
    AgQm401BtNZPmagvHP55THZHyGTZxd0/9V9UvaVxL8iWr6XNlkK0QUd4wGnijyG7
    EwC4crf1JfZNcKo8j/qKB6bvS7tFklBx4Dx7QI916rW1J1oDp10hVUpRL/0FlYz1
    kQEL0kypkFEcN1gD2pCe+GqMb/4M0FLmwBqTLyFeupyZdcK7XP0Ib/tGg8nA0h4c
    4EMcdmapYxvCPEUL954m1ZtVgN7w9Gr/X598tYDdNQKBgQD/M0ow1dCnC0aEFhMX
    Xj5SbFysqJxkrMUSw4T6gLHiZIOW1RqmjKT8PM0/m4zwYSBAGMJ+wVMHqyovVY6Q
    /aHJNUxJkFDzA+zwyzULXWGB5/TKZuLVXfLxOUQHqhhcuStlxe1OnQHmF1qOpIkg
    74GZaPC1mNBhmB6O0DHPHqgUKwKBgQDP++mO9Bb5+jNUFMqqESCODDwoNKstgQM9
    g9eIehtdC2AOynN2/W2J0R1ZyC6Rq2Yk7Rn2gnuWsxxjGFjpoSxRgQMELR0ttriv
    UGy4l1E9frMB1Le4DedF1lIrrPUJ/SoxT7zTG8r2Z41cXtBYdtTVmBIwmo83cOt1
    9qFYsklxcwKBgDdkWZkp/8USRHcNF4297gcT8DWlz3Rmr8v31lhNMM80A//sN4Gp
    C3KYe/BvgfL3Efn3pde/fJcwhtKJXo2ID+LNh8Z75aYp1vcZFGVoGm8I+vAnztqD
    LuU/Cc4kFG+j3ZCUmoKyv6PCs+w8OGuGsPmsdnrkNW7JhvB2rikHvXHLAoGAd5XO
    uuVZ+K2Fqciypopmf4ZFaJCwA9/0LwCJgu1CooMR3i9FqJsaym00RRU2wYcdmgnC
    LdzklsexgMDVDrAfPVXCmDogVtKC6jqB6LkIeyVIY7sdT3SfD6alZHt0ASRRiDzi
    wzdtwbPUsdHKVbMtuQpRGyUjR6tjl1YRe2A3nkUCgYEA8KSqgZ80+R7elMOvp/m9
    pgYsAdItPDKwElbsXDL35F4bfJHYW63aP+Ha2mqiGr5wf7uDrxJ32ugTmTOLyarN
    6FNUA0ZZPPiJf5u0GnXk4kLO+ytuKydy1p6TdlYoE5EB+RYIsuVCS68HzBAAssL9
    yTgahRn5ckxXTx4m3NFvfSg=
    -----END PRIVATE KEY-----
    """
    /// The RSA-1024 private key (PKCS#8 PEM).
    public static let rsa1024 = """
    -----BEGIN PRIVATE KEY-----
    MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBAMDs//laMRXUT1yx
    yRY1ze2zJmEBpZ6HvdZyBiho6vQpEhQd3JzNB70DKBmlH7eRxafHn1VbtyiaryOH
    hZRQx9843k9nH84/9Ki+OPcfnB9/+ZRZtavtEiNkOgncpsohdw3H4rAgp2yFY24s
    ob4m6/zAW3/GyjlOkd4oZRueNLRhAgMBAAECgYEAqarEo2KycGQ7N2YTVrkS1c0M
    H5v3L6hpR8MXr0o192x3PcHVVwDpoUy5Y3RYpHRKw/dHJSZ3ufnvtOtmir1QSHUx
    GljJP8A5WkbvE2ntRNN9pZRscxez0KvNZ+EdzOZXaa3Iut6BH/q6mPo5M2Vy1LWn
    WuWd+lnPxZUJ0PbBcMECQQDfNkPlgQmAKPaWjponRS5oUbZOZ6ojLePVEYG8eHEi
    slgq2PpXkdAMghqKKY0NbDAgGT7tAoPnBkzKHV5762SFAkEA3UPXzALT/Ij4kCCk
    rALN6ThuFk+gOy0/+DQU3LIdNa8NQEkChe0pyfk98Bml6+Zo+HhVJ1h0LxdOMFsm
    HVq1LQJBAK7CftA+giC8cawZBCqA6L+2UiT61uNqN3oHlero5bNDrPIHJaHQQPK6
    HmtT8uKydM981J6eHIWRkiegbOxatT0CQCv30kcA/Nz+3t3NDsv7lq1UgFPAqOd5
    e2+38blVT4aebXSrzWuNkDNJauxuPFFfLNbLGqjB4/yDlg733eARaVUCQDGqL4/J
    D4WRryXi0bVfsnPlUqX3Cy2rb54N6yZ2nUbQjMy8L2xPlD4IDchOti66vB22JUL2
    3z8Tsrz8JO0DPOE=
    -----END PRIVATE KEY-----
    """
    /// The p256 private key (PKCS#8 PEM).
    public static let p256 = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgK0KbDx6DK+FEobm5
    bhwj++es2UNkFsHUcy/gLOtJ+UehRANCAAQENp9+8VkK+AaBVOXPb+VYR8SSi+6p
    tyzmfcAhCtYxEp90XKeHTVRHmIl/pDLX/GW51Rs7DzU/L+7/yh4IA21h
    -----END PRIVATE KEY-----
    """
    /// The x25519 private key (PKCS#8 PEM).
    public static let x25519 = """
    -----BEGIN PRIVATE KEY-----
    MC4CAQAwBQYDK2VuBCIEICh4m6sJ3RhN5UpdItPp69xhsLK8eFpX7wXjiYUv4VFD
    -----END PRIVATE KEY-----
    """
    /// The ed25519 private key (PKCS#8 PEM).
    public static let ed25519 = """
    -----BEGIN PRIVATE KEY-----
    MC4CAQAwBQYDK2VwBCIEIGp8Ng00lopPoSZmp3hXTUnFwST+w+32gfdfH9GQJfj7
    -----END PRIVATE KEY-----
    """
}
