extension Noise.HandshakePattern {
    /// The one-way patterns (section 7.4).
    public static let n = try! Noise.HandshakePattern(named: "N")
    /// `K`: one-way, both static keys known in advance.
    public static let k = try! Noise.HandshakePattern(named: "K")
    /// `X`: one-way, the sender's static key transmitted.
    public static let x = try! Noise.HandshakePattern(named: "X")
    /// `NN`: no static keys (anonymous, forward secret).
    public static let nn = try! Noise.HandshakePattern(named: "NN")
    /// `NK`: the responder's static key known to the initiator in advance.
    public static let nk = try! Noise.HandshakePattern(named: "NK")
    /// `XX`: both static keys transmitted, mutual authentication.
    public static let xx = try! Noise.HandshakePattern(named: "XX")
    /// `IK`: the initiator's static key sent at once, the responder's known in advance.
    public static let ik = try! Noise.HandshakePattern(named: "IK")
    /// `XK`: the responder's static key known in advance, the initiator's transmitted last.
    public static let xk = try! Noise.HandshakePattern(named: "XK")
    /// `KK`: both static keys known in advance.
    public static let kk = try! Noise.HandshakePattern(named: "KK")

    /// The fundamental patterns of the specification in its own notation: one-way (7.4), interactive
    /// (7.5) and deferred (18.2). Pre-messages stand above `...`.
    static let catalog: [String: String] = [
        "N": "<- s | ... | -> e, es",
        "K": "-> s | <- s | ... | -> e, es, ss",
        "X": "<- s | ... | -> e, es, s, ss",
        "NN": "-> e | <- e, ee",
        "NK": "<- s | ... | -> e, es | <- e, ee",
        "NX": "-> e | <- e, ee, s, es",
        "KN": "-> s | ... | -> e | <- e, ee, se",
        "KK": "-> s | <- s | ... | -> e, es, ss | <- e, ee, se",
        "KX": "-> s | ... | -> e | <- e, ee, se, s, es",
        "XN": "-> e | <- e, ee | -> s, se",
        "XK": "<- s | ... | -> e, es | <- e, ee | -> s, se",
        "XX": "-> e | <- e, ee, s, es | -> s, se",
        "IN": "-> e, s | <- e, ee, se",
        "IK": "<- s | ... | -> e, es, s, ss | <- e, ee, se",
        "IX": "-> e, s | <- e, ee, se, s, es",
        "NK1": "<- s | ... | -> e | <- e, ee, es",
        "NX1": "-> e | <- e, ee, s | -> es",
        "X1N": "-> e | <- e, ee | -> s | <- se",
        "X1K": "<- s | ... | -> e, es | <- e, ee | -> s | <- se",
        "XK1": "<- s | ... | -> e | <- e, ee, es | -> s, se",
        "X1K1": "<- s | ... | -> e | <- e, ee, es | -> s | <- se",
        "X1X": "-> e | <- e, ee, s, es | -> s | <- se",
        "XX1": "-> e | <- e, ee, s | -> es, s, se",
        "X1X1": "-> e | <- e, ee, s | -> es, s | <- se",
        "K1N": "-> s | ... | -> e | <- e, ee | -> se",
        "K1K": "-> s | <- s | ... | -> e, es | <- e, ee | -> se",
        "KK1": "-> s | <- s | ... | -> e | <- e, ee, se, es",
        "K1K1": "-> s | <- s | ... | -> e | <- e, ee, es | -> se",
        "K1X": "-> s | ... | -> e | <- e, ee, s, es | -> se",
        "KX1": "-> s | ... | -> e | <- e, ee, se, s | -> es",
        "K1X1": "-> s | ... | -> e | <- e, ee, s | -> se, es",
        "I1N": "-> e, s | <- e, ee | -> se",
        "I1K": "<- s | ... | -> e, es, s | <- e, ee | -> se",
        "IK1": "<- s | ... | -> e, s | <- e, ee, se, es",
        "I1K1": "<- s | ... | -> e, s | <- e, ee, es | -> se",
        "I1X": "-> e, s | <- e, ee, s, es | -> se",
        "IX1": "-> e, s | <- e, ee, se, s | -> es",
        "I1X1": "-> e, s | <- e, ee, s | -> se, es",
    ]

    /// The names of every fundamental pattern this implementation knows.
    public static var fundamentalPatternNames: [String] { catalog.keys.sorted() }
}
