import NIOCore

extension SecureChannel {
    /// Adds the inbound half of an established connection to `pipeline`: the frame decoder, then
    /// the transport handler that decrypts with `transport` and reassembles application messages
    /// of at most `maxMessageLength` bytes. A connection gets the same handlers from its
    /// handshake; this entry point is for the fuzz target FuzzChannelFrames, which feeds them a
    /// peer's byte stream split at arbitrary points.
    @_spi(Fuzzing) public static func addEstablishedInboundHandlers(
        to pipeline: ChannelPipeline.SynchronousOperations, transport: Noise.TransportState, maxMessageLength: Int
    ) throws {
        try pipeline.addHandler(FrameDecoder(maxFrameLength: Noise.maxMessageLength))
        try pipeline.addHandler(
            TransportHandler(
                transport: transport, maxMessageLength: maxMessageLength,
                messageTimeout: Configuration().messageTimeout, sendTimeout: Configuration().sendTimeout, pacing: OutboundPacing(limit: 1 << 20),
                streamEnd: StreamEnd()))
    }
}
