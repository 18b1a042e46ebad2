extension Noise.HandshakePattern {
    /// Parses the catalog's notation: lines separated by `|`, each `-> tokens` or `<- tokens`,
    /// pre-messages before a `...` line. The catalog is trusted data; a typo is a programming error
    /// caught by the tests of every pattern.
    static func parse(name: String, notation: String) throws(NoiseError) -> Noise.HandshakePattern {
        var lines = notation.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        var initiatorPre = [Token](), responderPre = [Token]()
        if let ellipsis = lines.firstIndex(of: "...") {
            for line in lines[..<ellipsis] {
                let (sender, tokens) = try parseLine(line)
                if sender == .initiator { initiatorPre = tokens } else { responderPre = tokens }
            }
            lines.removeSubrange(...ellipsis)
        }
        var messages = [Message]()
        for line in lines {
            let (sender, tokens) = try parseLine(line)
            messages.append(Message(sender: sender, tokens: tokens))
        }
        return Noise.HandshakePattern(
            unchecked: name, initiatorPreMessage: initiatorPre, responderPreMessage: responderPre, messages: messages)
    }

    private static func parseLine(_ line: String) throws(NoiseError) -> (Noise.Role, [Token]) {
        let sender: Noise.Role
        if line.hasPrefix("->") { sender = .initiator } else if line.hasPrefix("<-") { sender = .responder } else {
            throw .invalidPattern("bad line '\(line)'")
        }
        var tokens = [Token]()
        for word in line.dropFirst(2).split(separator: ",") {
            guard let token = Token(rawValue: word.trimmingCharacters(in: .whitespaces)) else {
                throw .invalidPattern("bad token in '\(line)'")
            }
            tokens.append(token)
        }
        return (sender, tokens)
    }
}
