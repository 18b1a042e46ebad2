// The Noise state machine the channel runs, so `import SecureChannel` gives `Noise` too.
@_exported import NoiseProtocol
