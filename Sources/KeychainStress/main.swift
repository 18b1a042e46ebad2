// Test helper only (not a product; never shipped in `sf`): writes passwords to a keychain in a loop
// and prints `synced N` after each completed synchronize(), meaning writes 0..<N are durable. The
// keychain's crash and two-process tests (Tests/SecureKeychainTests/FaultTests.swift) run it as a
// child process and SIGKILL it.
//
//   sf-keychain-stress --keychain PATH --prefix P [--tag T] [--count N] [--accounts N] [--sync-every N]
//
// --count 0 (the default) writes until killed; --accounts 0 gives every write its own account.
import Foundation
import SecureKeychain

/// The value of write `index`; the tests compute the same.
func value(tag: String, index: Int) -> String { "\(tag):\(index):" + String(repeating: "v", count: index % 64) }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("sf-keychain-stress: \(message)\n".utf8))
    exit(2)
}

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    guard name.hasPrefix("--"), let value = arguments.popFirst() else { fail("expected --NAME VALUE pairs, got \(name)") }
    options[String(name.dropFirst(2))] = value
}
func integer(_ name: String, in options: [String: String], default fallback: Int) -> Int {
    guard let text = options[name] else { return fallback }
    guard let number = Int(text), number >= 0 else { fail("--\(name) takes a non-negative integer") }
    return number
}
guard let path = options["keychain"], let prefix = options["prefix"] else { fail("--keychain and --prefix are required") }
let tag = options["tag"] ?? prefix
let count = integer("count", in: options, default: 0)
let accounts = integer("accounts", in: options, default: 0)
let syncEvery = max(1, integer("sync-every", in: options, default: 100))

do {
    // Four of these share one file in the tests, on a loaded machine: a writer must not give up
    // on the others' lock (5 s × 5 retries by default) while it waits for its turn.
    var configuration = Keychain.Configuration()
    configuration.busyTimeout = .seconds(120)
    let keychain = try Keychain(path: path, configuration: configuration)
    var index = 0
    while count == 0 || index < count {
        let account = accounts > 0 ? "\(prefix)\(index % accounts)" : "\(prefix)\(index)"
        try keychain.setPassword(value(tag: tag, index: index), service: "stress", account: account)
        index += 1
        if index % syncEvery == 0 || index == count {
            try keychain.synchronizeBlocking()
            FileHandle.standardOutput.write(Data("synced \(index)\n".utf8))
        }
    }
    try keychain.close()
} catch {
    fail("\(error)")
}
