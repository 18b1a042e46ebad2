import Foundation

/// One keychain item, after Keychain Services: a class, a primary key (access group, service,
/// account), descriptive attributes, dates, and the value (clear, or sealed through an `ItemSealer`).
public struct KeychainItem: Sendable, Equatable {
    /// The kind of item. The raw value is stored in the file (docs/FORMATS.md).
    public enum Class: UInt8, Sendable, CaseIterable {
        /// A password or other small secret for a service and account (`kSecClassGenericPassword`).
        case genericPassword = 1
        /// A cryptographic key (used by SecureKeys).
        case key = 2
    }

    /// The primary key: at most one item exists per identity.
    ///
    /// Names are stored in Unicode NFC, so canonically equivalent spellings (a precomposed "é" and
    /// "e" + combining accent) name the same item in memory, in the file, and in sealed-value bindings.
    /// The NFC is the Swift standard library's, the one `String`'s `==` and hashing use, so names that
    /// are equal in memory are always the same bytes in the file.
    public struct Identity: Hashable, Sendable {
        /// The item's class: identities of different classes never collide.
        public let itemClass: Class
        /// Groups items of one application or team; the empty string is the default group.
        public let accessGroup: String
        /// The service the item belongs to (NFC).
        public let service: String
        /// The account within the service (NFC).
        public let account: String

        /// An identity; the access group defaults to the default (empty) group.
        public init(_ itemClass: Class = .genericPassword, accessGroup: String = "", service: String, account: String) {
            self.itemClass = itemClass
            self.accessGroup = Self.nfc(accessGroup)
            self.service = Self.nfc(service)
            self.account = Self.nfc(account)
        }

        /// `name` in NFC. ASCII is already NFC, so the common case skips normalization, which would
        /// otherwise run on every item loaded and every lookup.
        ///
        /// The standard library's NFC (`_nfcCodeUnits`), not Foundation's
        /// `precomposedStringWithCanonicalMapping`: `String`'s `==` compares by the standard library's
        /// NFC, whose Unicode data is newer than Foundation's (17.0 against 15.1 with Swift 6.3.1), and
        /// with Foundation's two names equal in memory (U+113C5 and U+113C2 U+113C2, a Unicode 16.0
        /// composition) were stored as different bytes, so an update or delete missed the stored row
        /// and a sealed value failed to open through the other spelling.
        static func nfc(_ name: String) -> String {
            var name = name
            let isASCII = name.withUTF8 { bytes in bytes.allSatisfy { $0 < 0x80 } }
            return isASCII ? name : String(decoding: name._nfcCodeUnits, as: UTF8.self)
        }
    }

    /// Descriptive attributes, stored in clear.
    public struct Attributes: Sendable, Equatable {
        /// A user-visible name for the item (`kSecAttrLabel`).
        public var label: String?
        /// A user-visible remark (`kSecAttrComment`).
        public var comment: String?
        /// Application-defined bytes (`kSecAttrGeneric`).
        public var genericData: Data?

        /// Attributes; all absent by default.
        public init(label: String? = nil, comment: String? = nil, genericData: Data? = nil) {
            self.label = label
            self.comment = comment
            self.genericData = genericData
        }
    }

    /// The item's primary key.
    public var identity: Identity
    /// The item's descriptive attributes, stored in clear.
    public var attributes: Attributes
    /// When the item was added; kept across updates.
    public var creationDate: Date
    /// When the item's value or attributes last changed.
    public var modificationDate: Date
    /// True when `value` is sealed (a secure item); the clear value then needs the sealer.
    public var isSealed: Bool
    /// The stored value: clear bytes, or the sealer's output when `isSealed`.
    public var value: Data
}

extension KeychainItem.Identity {
    /// Primary-key order: class, access group, service, account.
    func precedes(_ other: Self) -> Bool {
        if itemClass != other.itemClass { return itemClass.rawValue < other.itemClass.rawValue }
        if accessGroup != other.accessGroup { return accessGroup < other.accessGroup }
        if service != other.service { return service < other.service }
        return account < other.account
    }
}

/// Selects items: `nil` parts match anything; `limit` caps the number of results.
public struct KeychainQuery: Sendable, Equatable {
    /// The class searched; a query never spans classes.
    public var itemClass: KeychainItem.Class
    /// Only items of this access group; `nil` matches every group.
    public var accessGroup: String?
    /// Only items of this service; `nil` matches every service.
    public var service: String?
    /// Only items of this account; `nil` matches every account.
    public var account: String?
    /// At most this many results, in primary-key order; `nil` for all.
    public var limit: Int?

    /// A query over one class; by default every item of that class.
    public init(
        _ itemClass: KeychainItem.Class = .genericPassword, accessGroup: String? = nil, service: String? = nil,
        account: String? = nil, limit: Int? = nil
    ) {
        self.itemClass = itemClass
        self.accessGroup = accessGroup
        self.service = service
        self.account = account
        self.limit = limit
    }

    /// The query matching exactly `identity`.
    public init(_ identity: KeychainItem.Identity) {
        self.init(identity.itemClass, accessGroup: identity.accessGroup, service: identity.service, account: identity.account)
    }

    func matches(_ identity: KeychainItem.Identity) -> Bool {
        identity.itemClass == itemClass
            && (accessGroup == nil || accessGroup == identity.accessGroup)
            && (service == nil || service == identity.service)
            && (account == nil || account == identity.account)
    }

    var notFound: KeychainError { .itemNotFound(service: service, account: account) }
}

/// One mutation waiting to be written: the item's new state, or nil for a deletion.
struct KeychainChange: Sendable {
    let identity: KeychainItem.Identity
    let item: StoredItem?
    /// The change deletes or replaces an item that existed: its old value's bytes are freed.
    var freesValue = false
}

/// An item as held in memory and in one row of the file: everything except its identity. Kept
/// compact (one allocation for the value; attributes boxed, as most items have none) because a
/// keychain holds every item in memory.
struct StoredItem: Sendable, Equatable {
    private final class AttributesBox: Sendable {
        let attributes: KeychainItem.Attributes
        init(_ attributes: KeychainItem.Attributes) { self.attributes = attributes }
    }

    private var attributesBox: AttributesBox?
    /// Seconds since 1970, as stored in the file.
    var created: Double
    var modified: Double
    var isSealed: Bool
    var value: [UInt8]

    init(attributes: KeychainItem.Attributes, created: Double, modified: Double, isSealed: Bool, value: [UInt8]) {
        self.attributesBox = attributes == .init() ? nil : AttributesBox(attributes)
        self.created = created
        self.modified = modified
        self.isSealed = isSealed
        self.value = value
    }

    var attributes: KeychainItem.Attributes {
        get { attributesBox?.attributes ?? .init() }
        set { attributesBox = newValue == .init() ? nil : AttributesBox(newValue) }
    }

    static func == (a: StoredItem, b: StoredItem) -> Bool {
        a.attributes == b.attributes && a.created == b.created && a.modified == b.modified && a.isSealed == b.isSealed
            && a.value == b.value
    }

    func item(_ identity: KeychainItem.Identity) -> KeychainItem {
        KeychainItem(
            identity: identity, attributes: attributes, creationDate: Date(timeIntervalSince1970: created),
            modificationDate: Date(timeIntervalSince1970: modified), isSealed: isSealed, value: Data(value))
    }
}
