public import Foundation

// The keys and values of the keychain's dictionaries, with Apple's names and Apple's strings
// (`kSecClass` is "class", `kSecAttrAccount` is "acct", `kSecAttrAccessibleWhenUnlocked` is
// "ak"): a dictionary built with them, or printed from a result, reads as it does on a device.
// Each is a `CFString` (an `NSString` here, as it is toll-free bridged on Apple platforms), so
// that iOS code that stores them in `[String: AnyObject]` compiles; the keychain's own code
// uses the same strings as Swift strings (`SecKey`).

// The constants are `nonisolated(unsafe)` because `NSString` is not `Sendable` on Linux; each
// is an immutable string that nothing mutates.

/// The strings of the `kSec…` constants, as Swift strings, by the constant's name without
/// `kSec`: `SecKey.AttrAccount` is `kSecAttrAccount`'s "acct".
enum SecKey {
  static let Class = "class"
  static let ClassGenericPassword = "genp"
  static let ClassInternetPassword = "inet"
  static let ClassCertificate = "cert"
  static let ClassKey = "keys"
  static let ClassIdentity = "idnt"
  static let AttrAccessGroup = "agrp"
  static let AttrAccessible = "pdmn"
  static let AttrAccessControl = "accc"
  static let AttrCreationDate = "cdat"
  static let AttrModificationDate = "mdat"
  static let AttrDescription = "desc"
  static let AttrComment = "icmt"
  static let AttrCreator = "crtr"
  static let AttrType = "type"
  static let AttrLabel = "labl"
  static let AttrIsInvisible = "invi"
  static let AttrIsNegative = "nega"
  static let AttrAccount = "acct"
  static let AttrService = "svce"
  static let AttrGeneric = "gena"
  static let AttrSecurityDomain = "sdmn"
  static let AttrServer = "srvr"
  static let AttrProtocol = "ptcl"
  static let AttrAuthenticationType = "atyp"
  static let AttrPort = "port"
  static let AttrPath = "path"
  static let AttrSynchronizable = "sync"
  static let AttrSynchronizableAny = "syna"
  static let AttrAccessibleWhenUnlocked = "ak"
  static let AttrAccessibleAfterFirstUnlock = "ck"
  static let AttrAccessibleAlways = "dk"
  static let AttrAccessibleWhenUnlockedThisDeviceOnly = "aku"
  static let AttrAccessibleAfterFirstUnlockThisDeviceOnly = "cku"
  static let AttrAccessibleAlwaysThisDeviceOnly = "dku"
  static let AttrAccessibleWhenPasscodeSetThisDeviceOnly = "akpu"
  static let AttrProtocolFTP = "ftp "
  static let AttrProtocolFTPAccount = "ftpa"
  static let AttrProtocolHTTP = "http"
  static let AttrProtocolIRC = "irc "
  static let AttrProtocolNNTP = "nntp"
  static let AttrProtocolPOP3 = "pop3"
  static let AttrProtocolSMTP = "smtp"
  static let AttrProtocolSOCKS = "sox "
  static let AttrProtocolIMAP = "imap"
  static let AttrProtocolLDAP = "ldap"
  static let AttrProtocolAppleTalk = "atlk"
  static let AttrProtocolAFP = "afp "
  static let AttrProtocolTelnet = "teln"
  static let AttrProtocolSSH = "ssh "
  static let AttrProtocolFTPS = "ftps"
  static let AttrProtocolHTTPS = "htps"
  static let AttrProtocolHTTPProxy = "htpx"
  static let AttrProtocolHTTPSProxy = "htsx"
  static let AttrProtocolFTPProxy = "ftpx"
  static let AttrProtocolSMB = "smb "
  static let AttrProtocolRTSP = "rtsp"
  static let AttrProtocolRTSPProxy = "rtsx"
  static let AttrProtocolDAAP = "daap"
  static let AttrProtocolEPPC = "eppc"
  static let AttrProtocolIPP = "ipp "
  static let AttrProtocolNNTPS = "ntps"
  static let AttrProtocolLDAPS = "ldps"
  static let AttrProtocolTelnetS = "tels"
  static let AttrProtocolIMAPS = "imps"
  static let AttrProtocolIRCS = "ircs"
  static let AttrProtocolPOP3S = "pops"
  static let AttrAuthenticationTypeNTLM = "ntlm"
  static let AttrAuthenticationTypeMSN = "msna"
  static let AttrAuthenticationTypeDPA = "dpaa"
  static let AttrAuthenticationTypeRPA = "rpaa"
  static let AttrAuthenticationTypeHTTPBasic = "http"
  static let AttrAuthenticationTypeHTTPDigest = "httd"
  static let AttrAuthenticationTypeHTMLForm = "form"
  static let AttrAuthenticationTypeDefault = "dflt"
  static let MatchLimit = "m_Limit"
  static let MatchLimitOne = "m_LimitOne"
  static let MatchLimitAll = "m_LimitAll"
  static let MatchCaseInsensitive = "m_CaseInsensitive"
  static let ReturnData = "r_Data"
  static let ReturnAttributes = "r_Attributes"
  static let ReturnRef = "r_Ref"
  static let ReturnPersistentRef = "r_PersistentRef"
  static let ValueData = "v_Data"
  static let ValueRef = "v_Ref"
  static let ValuePersistentRef = "v_PersistentRef"
  static let UseDataProtectionKeychain = "nleg"
  static let UseAuthenticationUI = "u_AuthUI"
  static let UseAuthenticationUIAllow = "u_AuthUIA"
  static let UseAuthenticationUIFail = "u_AuthUIF"
  static let UseAuthenticationUISkip = "u_AuthUIS"
  static let UseOperationPrompt = "u_OpPrompt"
}

// MARK: Item class

/// The key of an item's class: `kSecClassGenericPassword` or `kSecClassInternetPassword`.
nonisolated(unsafe) public let kSecClass: CFString = CFString(string: SecKey.Class)
/// A generic password: found by service and account.
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = CFString(
  string: SecKey.ClassGenericPassword)
/// An internet password: found by server, protocol, port, path, account and more.
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = CFString(
  string: SecKey.ClassInternetPassword)
/// Certificates are not kept by this keychain: an item of this class gets `errSecUnimplemented`.
nonisolated(unsafe) public let kSecClassCertificate: CFString = CFString(
  string: SecKey.ClassCertificate)
/// Keys are not kept by this keychain: an item of this class gets `errSecUnimplemented`.
nonisolated(unsafe) public let kSecClassKey: CFString = CFString(string: SecKey.ClassKey)
/// Identities are not kept by this keychain: an item of this class gets `errSecUnimplemented`.
nonisolated(unsafe) public let kSecClassIdentity: CFString = CFString(string: SecKey.ClassIdentity)

// MARK: Attributes

/// The access group of an item (a string): one of the app's keychain access groups.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = CFString(
  string: SecKey.AttrAccessGroup)
/// When an item can be read (one of the `kSecAttrAccessible…` values); by default
/// `kSecAttrAccessibleWhenUnlocked`.
nonisolated(unsafe) public let kSecAttrAccessible: CFString = CFString(
  string: SecKey.AttrAccessible)
/// Access control objects (biometry, user presence) are not simulated: a dictionary with this
/// key gets `errSecUnimplemented`.
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = CFString(
  string: SecKey.AttrAccessControl)
/// When the item was created (a date, read only).
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = CFString(
  string: SecKey.AttrCreationDate)
/// When the item was last changed (a date, read only).
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = CFString(
  string: SecKey.AttrModificationDate)
/// A description of the item's kind (a string).
nonisolated(unsafe) public let kSecAttrDescription: CFString = CFString(
  string: SecKey.AttrDescription)
/// A comment (a string).
nonisolated(unsafe) public let kSecAttrComment: CFString = CFString(string: SecKey.AttrComment)
/// The item's creator, a four-character code (a number).
nonisolated(unsafe) public let kSecAttrCreator: CFString = CFString(string: SecKey.AttrCreator)
/// The item's type, a four-character code (a number).
nonisolated(unsafe) public let kSecAttrType: CFString = CFString(string: SecKey.AttrType)
/// A label a person reads (a string).
nonisolated(unsafe) public let kSecAttrLabel: CFString = CFString(string: SecKey.AttrLabel)
/// Whether the item is hidden from people (a Boolean).
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = CFString(
  string: SecKey.AttrIsInvisible)
/// Whether the item stands for "never save a password here" (a Boolean).
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = CFString(
  string: SecKey.AttrIsNegative)
/// The account (a string); part of what identifies a password.
nonisolated(unsafe) public let kSecAttrAccount: CFString = CFString(string: SecKey.AttrAccount)
/// The service of a generic password (a string); part of what identifies it.
nonisolated(unsafe) public let kSecAttrService: CFString = CFString(string: SecKey.AttrService)
/// Data of the app's own about a generic password (data).
nonisolated(unsafe) public let kSecAttrGeneric: CFString = CFString(string: SecKey.AttrGeneric)
/// The security domain of an internet password (a string).
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = CFString(
  string: SecKey.AttrSecurityDomain)
/// The server of an internet password (a string).
nonisolated(unsafe) public let kSecAttrServer: CFString = CFString(string: SecKey.AttrServer)
/// The protocol of an internet password (one of the `kSecAttrProtocol…` values).
nonisolated(unsafe) public let kSecAttrProtocol: CFString = CFString(string: SecKey.AttrProtocol)
/// The authentication type of an internet password (one of the
/// `kSecAttrAuthenticationType…` values).
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = CFString(
  string: SecKey.AttrAuthenticationType)
/// The port of an internet password (a number).
nonisolated(unsafe) public let kSecAttrPort: CFString = CFString(string: SecKey.AttrPort)
/// The path of an internet password (a string).
nonisolated(unsafe) public let kSecAttrPath: CFString = CFString(string: SecKey.AttrPath)
/// Whether the item is synchronizable (a Boolean, or `kSecAttrSynchronizableAny` in a query).
/// Kept and matched as on a device, where it is part of what identifies an item; nothing is
/// ever synchronised: the simulated device has no iCloud.
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = CFString(
  string: SecKey.AttrSynchronizable)
/// In a query: synchronizable items and the others alike.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = CFString(
  string: SecKey.AttrSynchronizableAny)

// MARK: Accessibility values

/// Readable while the device is unlocked (class A). The default.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = CFString(
  string: SecKey.AttrAccessibleWhenUnlocked)
/// Readable from the first unlock after a reboot until the next reboot (class C), even while
/// the device is locked again: for background work.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = CFString(
  string: SecKey.AttrAccessibleAfterFirstUnlock)
/// Always readable (class D). Deprecated by Apple since iOS 12; kept so that old code runs.
@available(*, deprecated, message: "Use kSecAttrAccessibleAfterFirstUnlock, as Apple says")
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = CFString(
  string: SecKey.AttrAccessibleAlways)
/// As `kSecAttrAccessibleWhenUnlocked`, never restored to another device.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = CFString(
  string: SecKey.AttrAccessibleWhenUnlockedThisDeviceOnly)
/// As `kSecAttrAccessibleAfterFirstUnlock`, never restored to another device.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString =
  CFString(string: SecKey.AttrAccessibleAfterFirstUnlockThisDeviceOnly)
/// As `kSecAttrAccessibleAlways`, never restored to another device. Deprecated by Apple.
@available(
  *, deprecated, message: "Use kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, as Apple says"
)
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = CFString(
  string: SecKey.AttrAccessibleAlwaysThisDeviceOnly)
/// Readable while the device is unlocked, and only while it has a passcode: refused on a
/// device without one (`errSecAuthFailed`), and deleted when the passcode is removed.
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = CFString(
  string: SecKey.AttrAccessibleWhenPasscodeSetThisDeviceOnly)

// MARK: Protocol values

/// `kSecAttrProtocol` value: FTP. (Every protocol value is Apple's four-character code.)
nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = CFString(
  string: SecKey.AttrProtocolFTP)
/// `kSecAttrProtocol` value: FTPAccount.
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = CFString(
  string: SecKey.AttrProtocolFTPAccount)
/// `kSecAttrProtocol` value: HTTP.
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = CFString(
  string: SecKey.AttrProtocolHTTP)
/// `kSecAttrProtocol` value: IRC.
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = CFString(
  string: SecKey.AttrProtocolIRC)
/// `kSecAttrProtocol` value: NNTP.
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = CFString(
  string: SecKey.AttrProtocolNNTP)
/// `kSecAttrProtocol` value: POP3.
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = CFString(
  string: SecKey.AttrProtocolPOP3)
/// `kSecAttrProtocol` value: SMTP.
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = CFString(
  string: SecKey.AttrProtocolSMTP)
/// `kSecAttrProtocol` value: SOCKS.
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = CFString(
  string: SecKey.AttrProtocolSOCKS)
/// `kSecAttrProtocol` value: IMAP.
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = CFString(
  string: SecKey.AttrProtocolIMAP)
/// `kSecAttrProtocol` value: LDAP.
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = CFString(
  string: SecKey.AttrProtocolLDAP)
/// `kSecAttrProtocol` value: AppleTalk.
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = CFString(
  string: SecKey.AttrProtocolAppleTalk)
/// `kSecAttrProtocol` value: AFP.
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = CFString(
  string: SecKey.AttrProtocolAFP)
/// `kSecAttrProtocol` value: Telnet.
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = CFString(
  string: SecKey.AttrProtocolTelnet)
/// `kSecAttrProtocol` value: SSH.
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = CFString(
  string: SecKey.AttrProtocolSSH)
/// `kSecAttrProtocol` value: FTPS.
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = CFString(
  string: SecKey.AttrProtocolFTPS)
/// `kSecAttrProtocol` value: HTTPS.
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = CFString(
  string: SecKey.AttrProtocolHTTPS)
/// `kSecAttrProtocol` value: HTTPProxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = CFString(
  string: SecKey.AttrProtocolHTTPProxy)
/// `kSecAttrProtocol` value: HTTPSProxy.
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = CFString(
  string: SecKey.AttrProtocolHTTPSProxy)
/// `kSecAttrProtocol` value: FTPProxy.
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = CFString(
  string: SecKey.AttrProtocolFTPProxy)
/// `kSecAttrProtocol` value: SMB.
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = CFString(
  string: SecKey.AttrProtocolSMB)
/// `kSecAttrProtocol` value: RTSP.
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = CFString(
  string: SecKey.AttrProtocolRTSP)
/// `kSecAttrProtocol` value: RTSPProxy.
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = CFString(
  string: SecKey.AttrProtocolRTSPProxy)
/// `kSecAttrProtocol` value: DAAP.
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = CFString(
  string: SecKey.AttrProtocolDAAP)
/// `kSecAttrProtocol` value: EPPC.
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = CFString(
  string: SecKey.AttrProtocolEPPC)
/// `kSecAttrProtocol` value: IPP.
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = CFString(
  string: SecKey.AttrProtocolIPP)
/// `kSecAttrProtocol` value: NNTPS.
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = CFString(
  string: SecKey.AttrProtocolNNTPS)
/// `kSecAttrProtocol` value: LDAPS.
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = CFString(
  string: SecKey.AttrProtocolLDAPS)
/// `kSecAttrProtocol` value: TelnetS.
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = CFString(
  string: SecKey.AttrProtocolTelnetS)
/// `kSecAttrProtocol` value: IMAPS.
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = CFString(
  string: SecKey.AttrProtocolIMAPS)
/// `kSecAttrProtocol` value: IRCS.
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = CFString(
  string: SecKey.AttrProtocolIRCS)
/// `kSecAttrProtocol` value: POP3S.
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = CFString(
  string: SecKey.AttrProtocolPOP3S)

// MARK: Authentication type values

/// `kSecAttrAuthenticationType` value: NTLM. (Every value is Apple's four-character code.)
nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeNTLM)
/// `kSecAttrAuthenticationType` value: MSN.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeMSN)
/// `kSecAttrAuthenticationType` value: DPA.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeDPA)
/// `kSecAttrAuthenticationType` value: RPA.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeRPA)
/// `kSecAttrAuthenticationType` value: HTTPBasic.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeHTTPBasic)
/// `kSecAttrAuthenticationType` value: HTTPDigest.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeHTTPDigest)
/// `kSecAttrAuthenticationType` value: HTMLForm.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeHTMLForm)
/// `kSecAttrAuthenticationType` value: Default.
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = CFString(
  string: SecKey.AttrAuthenticationTypeDefault)

// MARK: Search

/// How many items `SecItemCopyMatching` returns: `kSecMatchLimitOne` (the default), or
/// `kSecMatchLimitAll`, or a number.
nonisolated(unsafe) public let kSecMatchLimit: CFString = CFString(string: SecKey.MatchLimit)
/// One item.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = CFString(string: SecKey.MatchLimitOne)
/// Every matching item.
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = CFString(string: SecKey.MatchLimitAll)
/// Whether strings are compared without regard to case (a Boolean).
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = CFString(
  string: SecKey.MatchCaseInsensitive)

// MARK: Return types

/// Return the secret (a Boolean).
nonisolated(unsafe) public let kSecReturnData: CFString = CFString(string: SecKey.ReturnData)
/// Return the attributes (a Boolean).
nonisolated(unsafe) public let kSecReturnAttributes: CFString = CFString(
  string: SecKey.ReturnAttributes)
/// Return a reference to the item (a Boolean): for passwords, the attributes and the class.
nonisolated(unsafe) public let kSecReturnRef: CFString = CFString(string: SecKey.ReturnRef)
/// Return a persistent reference to the item (a Boolean): data that finds it again.
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = CFString(
  string: SecKey.ReturnPersistentRef)

// MARK: Values

/// The secret of an item (data): what is encrypted at rest.
nonisolated(unsafe) public let kSecValueData: CFString = CFString(string: SecKey.ValueData)
/// An item reference: not kept by this keychain (`errSecUnimplemented`).
nonisolated(unsafe) public let kSecValueRef: CFString = CFString(string: SecKey.ValueRef)
/// A persistent reference, as `kSecReturnPersistentRef` returns it (data).
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = CFString(
  string: SecKey.ValuePersistentRef)

// MARK: Use

/// On macOS, use the data-protection keychain (a Boolean). Accepted; this keychain is one.
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = CFString(
  string: SecKey.UseDataProtectionKeychain)
/// How to treat items that need authentication: accepted and ignored (nothing here asks the
/// user).
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = CFString(
  string: SecKey.UseAuthenticationUI)
/// `kSecUseAuthenticationUI` value: Allow (accepted; nothing asks the user).
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = CFString(
  string: SecKey.UseAuthenticationUIAllow)
/// `kSecUseAuthenticationUI` value: Fail (accepted; nothing asks the user).
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = CFString(
  string: SecKey.UseAuthenticationUIFail)
/// `kSecUseAuthenticationUI` value: Skip (accepted; nothing asks the user).
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = CFString(
  string: SecKey.UseAuthenticationUISkip)
/// A prompt for authentication (a string): accepted and ignored.
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = CFString(
  string: SecKey.UseOperationPrompt)
