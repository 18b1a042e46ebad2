import Foundation

/// Deterministic byte encodings of structured values, used for hashing them. See docs/FORMATS.md.
enum CanonicalEncoding {
    static func json<T: Encodable>(_ value: T) throws(SecureCoreError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.dataEncodingStrategy = .base64
        do {
            return try encoder.encode(value)
        } catch {
            throw SecureCoreError.invalidParameter("value cannot be encoded: \(error)")
        }
    }

    /// Tag-length-value encoding of a property list; dictionary entries sorted by the UTF-8 bytes of the key.
    static func propertyList(_ value: Any) throws(SecureCoreError) -> Data {
        var out = Data()
        try append(value, to: &out)
        return out
    }

    private static func append(_ value: Any, to out: inout Data) throws(SecureCoreError) {
        func length(_ n: Int) { out.append(contentsOf: withUnsafeBytes(of: UInt32(n).bigEndian, Array.init)) }
        func integer(_ n: Int64) { out.append(contentsOf: withUnsafeBytes(of: n.bigEndian, Array.init)) }
        func real(_ d: Double) { out.append(contentsOf: withUnsafeBytes(of: d.bitPattern.bigEndian, Array.init)) }

        switch value {
        case let v as String:
            out.append(UInt8(ascii: "s")); length(v.utf8.count); out.append(contentsOf: v.utf8)
        case let v as Data:
            out.append(UInt8(ascii: "b")); length(v.count); out.append(v)
        case let v as Date:
            out.append(UInt8(ascii: "D")); real(v.timeIntervalSinceReferenceDate)
        case let v as Bool where type(of: value) == Bool.self:
            out.append(UInt8(ascii: v ? "t" : "f"))
        case let v as Double where type(of: value) == Double.self:
            out.append(UInt8(ascii: "r")); real(v)
        case let v as Float where type(of: value) == Float.self:
            out.append(UInt8(ascii: "r")); real(Double(v))
        case let v as any BinaryInteger where !(value is NSNumber):
            guard let n = Int64(exactly: v) else { throw SecureCoreError.invalidParameter("integer out of plist range") }
            out.append(UInt8(ascii: "i")); integer(n)
        case let v as NSNumber:
            let type = String(cString: v.objCType)
            if type == "c" || type == "B" {
                out.append(UInt8(ascii: v.boolValue ? "t" : "f"))
            } else if type == "d" || type == "f" {
                out.append(UInt8(ascii: "r")); real(v.doubleValue)
            } else {
                out.append(UInt8(ascii: "i")); integer(v.int64Value)
            }
        case let v as [String: Any]:
            out.append(UInt8(ascii: "d")); length(v.count)
            for key in v.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                try append(key, to: &out)
                try append(v[key]!, to: &out)
            }
        case let v as [Any]:
            out.append(UInt8(ascii: "a")); length(v.count)
            for element in v { try append(element, to: &out) }
        default:
            throw SecureCoreError.invalidParameter("\(type(of: value)) is not a property-list type")
        }
    }
}
