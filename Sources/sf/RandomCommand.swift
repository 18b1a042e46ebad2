import ArgumentParser
import SecureFoundation

struct RandomCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "random", abstract: "Print secure random data.")

    @Option(name: .shortAndLong, help: "Number of bytes (or characters with --alphabet).")
    var count: Int = 32

    func run() throws {
        print(Hex.encode(SecureRandom.bytes(count: count)))
    }
}
