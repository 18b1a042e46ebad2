import Foundation
import NIOCore

extension SecureChannel {
    /// The application framing inside transport messages (docs/FORMATS.md): each plaintext is a
    /// flag byte, `0x00` when more of the same application message follows, `0x01` for its last
    /// part, then up to `maxChunkLength` bytes. An empty application message is one `0x01` alone.
    enum ApplicationFraming {
        /// The most application bytes one transport message carries: 65,535 - 16 (tag) - 1 (flag).
        static let maxChunkLength = Noise.maxTransportPayloadLength - 1
        static let more: UInt8 = 0x00
        static let last: UInt8 = 0x01

        /// The transport plaintexts carrying `message`, in order.
        static func plaintexts(of message: ByteBuffer) -> [Data] {
            let bytes = message.readableBytesView
            var result = [Data]()
            var start = bytes.startIndex
            repeat {
                let end = min(start + maxChunkLength, bytes.endIndex)
                var plaintext = Data(capacity: 1 + end - start)
                plaintext.append(end == bytes.endIndex ? last : more)
                plaintext.append(contentsOf: bytes[start..<end])
                result.append(plaintext)
                start = end
            } while start < bytes.endIndex
            return result
        }

        /// Collects transport plaintexts into application messages of at most `limit` bytes.
        struct Reassembler {
            let limit: Int
            private var pending = ByteBuffer()

            init(limit: Int) {
                self.limit = limit
            }

            /// Adds one plaintext; returns the application message it completes, if any.
            mutating func append(_ plaintext: Data) throws(SecureChannelError) -> ByteBuffer? {
                guard let flag = plaintext.first, flag == more || flag == last else { throw .malformedApplicationFrame }
                guard pending.readableBytes + plaintext.count - 1 <= limit else { throw .messageTooLarge(limit: limit) }
                pending.writeBytes(plaintext.dropFirst())
                guard flag == last else { return nil }
                defer { pending = ByteBuffer() }
                return pending
            }
        }
    }
}
