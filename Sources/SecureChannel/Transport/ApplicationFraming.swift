import Foundation
import NIOCore

extension SecureChannel {
    /// The application framing inside transport messages (docs/FORMATS.md): each plaintext is a
    /// flag byte, `0x00` when more of the same application message follows, `0x01` for its last
    /// part, then up to `maxChunkLength` bytes. An empty application message is one `0x01` alone.
    /// The sender's last transport message is `0x02` alone, the authenticated end of its stream
    /// (as TLS's close_notify): a connection that closes without it was cut short.
    enum ApplicationFraming {
        /// The most application bytes one transport message carries: 65,535 - 16 (tag) - 1 (flag).
        static let maxChunkLength = Noise.maxTransportPayloadLength - 1
        static let more: UInt8 = 0x00
        static let last: UInt8 = 0x01
        static let endOfStream: UInt8 = 0x02

        /// What one transport plaintext completes.
        enum Received {
            /// An application message, whole.
            case message(ByteBuffer)
            /// The peer's end of stream: it sends nothing more.
            case endOfStream
        }

        /// The end-of-stream transport message, in its frame.
        static func sealEndOfStream(with transport: Noise.TransportState, allocator: ByteBufferAllocator) throws(NoiseError)
            -> ByteBuffer
        {
            guard let sending = transport.sending else { throw .oneWayPattern }
            guard sending.nonce < UInt64.max else { throw .nonceExhausted }
            let sealedLength = 1 + Noise.tagLength
            var frame = allocator.buffer(capacity: FrameEncoder.headerLength + sealedLength)
            frame.writeInteger(UInt16(sealedLength))
            _ = [endOfStream].withUnsafeBytes { plaintext in
                frame.writeWithUnsafeMutableBytes(minimumWritableBytes: sealedLength) { destination in
                    // Cannot fail: a sending key and a nonce checked above.
                    try! transport.writeMessage(plaintext, into: destination)
                }
            }
            return frame
        }
        /// The most full-size frames sealed into one outgoing buffer: 15 frames of 65,537 bytes
        /// fit a 1 MiB buffer (NIO rounds capacities up to a power of two).
        static let framesPerBuffer = 15

        /// The number of transport messages carrying an application message of `length` bytes.
        static func chunkCount(forLength length: Int) -> Int {
            max(1, (length + maxChunkLength - 1) / maxChunkLength)
        }

        /// The bytes on the wire (frames, lengths included) for an application message of `length` bytes.
        static func framedByteCount(forLength length: Int) -> Int {
            length + chunkCount(forLength: length) * (FrameEncoder.headerLength + 1 + Noise.tagLength)
        }

        /// Seals `message` as its transport messages, in order, each in its frame, and hands the
        /// frames to `emit` in buffers of at most `framesPerBuffer` frames (`isLast` with the one
        /// holding the final frame). The only copies of the application bytes are into one
        /// reused plaintext scratch buffer and out of swift-crypto's sealed box into the frame.
        /// Checks before sealing anything that the sending nonces cannot run out mid-message
        /// (`nonceExhausted`), so a message is either sent whole or not at all.
        static func seal(
            _ message: ByteBuffer, with transport: Noise.TransportState, buffers: inout SendBuffers,
            allocator: ByteBufferAllocator, emit: (_ frames: ByteBuffer, _ isLast: Bool) -> Void
        ) throws(NoiseError) {
            guard let sending = transport.sending else { throw .oneWayPattern }
            let length = message.readableBytes
            let chunks = chunkCount(forLength: length)
            guard sending.nonce <= UInt64.max - UInt64(chunks) else { throw .nonceExhausted }
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 + min(length, maxChunkLength), alignment: 16)
            defer { scratch.deallocate() }
            let maxBufferBytes = framesPerBuffer * FrameEncoder.maxFrameByteCount
            message.withUnsafeReadableBytes { bytes in
                var output: ByteBuffer?
                var start = 0
                repeat {
                    let end = min(start + maxChunkLength, length)
                    let isLast = end == length
                    scratch[0] = isLast ? last : more
                    UnsafeMutableRawBufferPointer(rebasing: scratch[1...]).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                    let plaintext = UnsafeRawBufferPointer(rebasing: scratch[..<(1 + end - start)])
                    let sealedLength = plaintext.count + Noise.tagLength
                    if output == nil {
                        output = buffers.take(
                            capacity: min(framedByteCount(forLength: length - start), maxBufferBytes), allocator: allocator)
                    }
                    output!.writeInteger(UInt16(sealedLength))
                    output!.writeWithUnsafeMutableBytes(minimumWritableBytes: sealedLength) { destination in
                        // Cannot fail: a transport state with a sending key, a full-size chunk at
                        // most, and nonces checked above.
                        try! transport.writeMessage(plaintext, into: destination)
                    }
                    if isLast || output!.writableBytes < FrameEncoder.maxFrameByteCount {
                        emit(output!, isLast)
                        buffers.recycle(output!)
                        output = nil
                    }
                    start = end
                } while start < length
            }
        }

        /// Outgoing frame buffers kept for reuse: a large buffer freshly allocated costs the kernel
        /// zeroing its pages (the allocator hands big blocks back to the system when freed), so the
        /// buffers of one message are taken again for the next once the socket has written them
        /// (when they are uniquely referenced again). At most `maxSpares` are kept; the owner
        /// empties them when the connection has been idle for a while.
        struct SendBuffers {
            /// The most buffers kept (1 MiB each): enough for the frames of one message in flight
            /// while the next is sealed.
            static let maxSpares = 3
            /// The size of every kept buffer: `framesPerBuffer` full frames.
            static let pooledCapacity = framesPerBuffer * FrameEncoder.maxFrameByteCount
            /// Buffers smaller than this are allocated each time and never kept.
            static let minPooledCapacity = 1 << 16
            private var spares: [ByteBuffer] = []

            /// An empty buffer with room for `capacity` bytes: a spare the socket has finished
            /// with, or a new one.
            mutating func take(capacity: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
                if capacity >= Self.minPooledCapacity {
                    for index in spares.indices where spares[index].capacity >= capacity {
                        if spares[index].modifyIfUniquelyOwned({ _ in true }) == true {
                            var buffer = spares.remove(at: index)
                            buffer.clear()
                            return buffer
                        }
                    }
                }
                // Pooled buffers all have the largest size, so any spare fits any later need.
                return allocator.buffer(capacity: capacity >= Self.minPooledCapacity ? Self.pooledCapacity : capacity)
            }

            /// Keeps `buffer` (just handed to the channel) for reuse if it is large and there is room.
            mutating func recycle(_ buffer: ByteBuffer) {
                guard buffer.capacity >= Self.minPooledCapacity, spares.count < Self.maxSpares else { return }
                spares.append(buffer)
            }

            /// Whether any buffer is kept.
            var isEmpty: Bool { spares.isEmpty }

            /// Drops every kept buffer.
            mutating func removeAll() { spares = [] }
        }

        /// Collects transport plaintexts into application messages of at most `limit` bytes.
        struct Reassembler {
            let limit: Int
            private var pending: ByteBuffer?
            /// The length of the last multi-part message, the capacity reserved for the next one
            /// (up to `maxReservation`), so a stream of similar messages grows no buffer in steps.
            private var lastLength = 0
            static let maxReservation = 1 << 20

            init(limit: Int) {
                self.limit = limit
            }

            /// Whether a message has begun and not ended.
            var isPartway: Bool { pending != nil }

            /// Adds one plaintext; returns the application message or the end of stream it
            /// completes, if any. The end of stream is `0x02` alone, between messages.
            mutating func append(_ plaintext: Data, allocator: ByteBufferAllocator) throws(SecureChannelError) -> Received? {
                if plaintext.first == endOfStream {
                    guard plaintext.count == 1, pending == nil else { throw .malformedApplicationFrame }
                    return .endOfStream
                }
                return try appendChunk(plaintext, allocator: allocator).map(Received.message)
            }

            private mutating func appendChunk(_ plaintext: Data, allocator: ByteBufferAllocator) throws(SecureChannelError) -> ByteBuffer? {
                guard let flag = plaintext.first, flag == more || flag == last else { throw .malformedApplicationFrame }
                let chunkLength = plaintext.count - 1
                guard (pending?.readableBytes ?? 0) + chunkLength <= limit else { throw .messageTooLarge(limit: limit) }
                return plaintext.withUnsafeBytes { bytes in
                    let chunk = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
                    guard var message = pending else {
                        if flag == last {
                            // The whole message in one transport message: one exact-size buffer.
                            var message = allocator.buffer(capacity: chunkLength)
                            message.writeBytes(chunk)
                            return message
                        }
                        var message = allocator.buffer(
                            capacity: min(limit, max(2 * chunkLength, min(lastLength, Self.maxReservation))))
                        message.writeBytes(chunk)
                        pending = message
                        return nil
                    }
                    pending = nil  // keeps `message` uniquely referenced, so it grows in place
                    message.writeBytes(chunk)
                    guard flag == last else {
                        pending = message
                        return nil
                    }
                    lastLength = message.readableBytes
                    return message
                }
            }
        }
    }
}
