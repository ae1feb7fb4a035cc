import CAppGroupsCrypto

/// The cryptography the keybag and the keychain use, each a call into the system's libcrypto
/// (OpenSSL 3): AES-256-GCM, PBKDF2-HMAC-SHA256 and the system's random generator. Nothing
/// here is written by hand; this file only moves bytes in and out of the EVP interface.
///
/// Errors name the libcrypto call that failed and libcrypto's own reason; they never carry a
/// key, a passcode, a plaintext or any byte derived from one.
package enum Crypto {
  /// The length of an AES-256 key, in bytes.
  package static let keyLength = 32
  /// The length of a GCM nonce, in bytes (96 bits, as NIST SP 800-38D recommends).
  package static let nonceLength = 12
  /// The length of a GCM authentication tag, in bytes.
  package static let tagLength = 16

  /// `count` bytes from the system's cryptographically secure generator.
  ///
  /// The corresponding libcrypto call is `RAND_bytes(3)`.
  package static func randomBytes(_ count: Int) throws(CryptoError) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    let status = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
    guard status == 1 else { throw CryptoError("RAND_bytes") }
    return bytes
  }

  /// Encrypts and authenticates `plaintext` with AES-256-GCM under `key`, binding
  /// `associatedData` (authenticated, not encrypted). The nonce is fresh random bytes, so one
  /// key may seal many messages.
  ///
  /// - Returns: The nonce, the ciphertext and the tag, in one value.
  /// - Throws: ``CryptoError`` when the key is not 32 bytes or libcrypto fails.
  package static func seal(
    _ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = []
  ) throws(CryptoError) -> SealedBox {
    guard key.count == keyLength else {
      throw CryptoError("AES-256-GCM", reason: "the key is not 32 bytes")
    }
    let nonce = try randomBytes(nonceLength)
    guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError("EVP_CIPHER_CTX_new") }
    defer { EVP_CIPHER_CTX_free(context) }
    var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
    var tag = [UInt8](repeating: 0, count: tagLength)
    var written: Int32 = 0
    var total = 0
    guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1,
      EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1
    else { throw CryptoError("EVP_EncryptInit_ex") }
    if !associatedData.isEmpty {
      let added = EVP_EncryptUpdate(
        context, nil, &written, associatedData, Int32(associatedData.count))
      guard added == 1 else { throw CryptoError("EVP_EncryptUpdate") }
    }
    let updated = ciphertext.withUnsafeMutableBufferPointer { output in
      EVP_EncryptUpdate(context, output.baseAddress, &written, plaintext, Int32(plaintext.count))
    }
    guard updated == 1 else { throw CryptoError("EVP_EncryptUpdate") }
    total = Int(written)
    let finished = ciphertext.withUnsafeMutableBufferPointer { output in
      EVP_EncryptFinal_ex(context, output.baseAddress.map { $0 + total }, &written)
    }
    guard finished == 1 else { throw CryptoError("EVP_EncryptFinal_ex") }
    total += Int(written)
    let tagged = tag.withUnsafeMutableBytes { output in
      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), output.baseAddress)
    }
    guard tagged == 1 else { throw CryptoError("EVP_CIPHER_CTX_ctrl(GET_TAG)") }
    ciphertext.removeSubrange(total...)
    return SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
  }

  /// Checks `box`'s tag under `key` and `associatedData` and returns its plaintext.
  ///
  /// - Throws: ``CryptoError/isAuthenticationFailure`` set when the tag does not match: a
  ///   wrong key (a wrong passcode, for a wrapped key), other associated data, or bytes that
  ///   were changed.
  package static func open(
    _ box: SealedBox, key: [UInt8], associatedData: [UInt8] = []
  ) throws(CryptoError) -> [UInt8] {
    guard key.count == keyLength else {
      throw CryptoError("AES-256-GCM", reason: "the key is not 32 bytes")
    }
    guard box.nonce.count == nonceLength, box.tag.count == tagLength else {
      throw CryptoError("AES-256-GCM", reason: "the sealed box is malformed", authentication: true)
    }
    guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError("EVP_CIPHER_CTX_new") }
    defer { EVP_CIPHER_CTX_free(context) }
    var plaintext = [UInt8](repeating: 0, count: box.ciphertext.count + 16)
    var written: Int32 = 0
    var total = 0
    guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceLength), nil) == 1,
      EVP_DecryptInit_ex(context, nil, nil, key, box.nonce) == 1
    else { throw CryptoError("EVP_DecryptInit_ex") }
    if !associatedData.isEmpty {
      let added = EVP_DecryptUpdate(
        context, nil, &written, associatedData, Int32(associatedData.count))
      guard added == 1 else { throw CryptoError("EVP_DecryptUpdate") }
    }
    let updated = plaintext.withUnsafeMutableBufferPointer { output in
      EVP_DecryptUpdate(
        context, output.baseAddress, &written, box.ciphertext, Int32(box.ciphertext.count))
    }
    guard updated == 1 else { throw CryptoError("EVP_DecryptUpdate") }
    total = Int(written)
    var tag = box.tag
    let tagSet = tag.withUnsafeMutableBytes { input in
      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), input.baseAddress)
    }
    guard tagSet == 1 else { throw CryptoError("EVP_CIPHER_CTX_ctrl(SET_TAG)") }
    let verified = plaintext.withUnsafeMutableBufferPointer { output in
      EVP_DecryptFinal_ex(context, output.baseAddress.map { $0 + total }, &written)
    }
    guard verified > 0 else {
      wipe(&plaintext)
      ERR_clear_error()
      throw CryptoError(
        "EVP_DecryptFinal_ex", reason: "the authentication tag does not match",
        authentication: true)
    }
    total += Int(written)
    plaintext.removeSubrange(total...)
    return plaintext
  }

  /// Derives a 32-byte key from `passcode` and `salt` with PBKDF2-HMAC-SHA256.
  ///
  /// The corresponding libcrypto call is `PKCS5_PBKDF2_HMAC(3)`.
  package static func deriveKey(
    passcode: [UInt8], salt: [UInt8], iterations: Int
  ) throws(CryptoError) -> [UInt8] {
    guard iterations > 0, iterations <= Int(Int32.max) else {
      throw CryptoError("PKCS5_PBKDF2_HMAC", reason: "the iteration count is out of range")
    }
    var key = [UInt8](repeating: 0, count: keyLength)
    let status = key.withUnsafeMutableBufferPointer { output in
      passcode.withUnsafeBufferPointer { password in
        password.withMemoryRebound(to: CChar.self) { password in
          PKCS5_PBKDF2_HMAC(
            password.baseAddress, Int32(password.count), salt, Int32(salt.count),
            Int32(iterations), EVP_sha256(), Int32(keyLength), output.baseAddress)
        }
      }
    }
    guard status == 1 else { throw CryptoError("PKCS5_PBKDF2_HMAC") }
    return key
  }

  /// The SHA-256 digest of `bytes` (32 bytes).
  ///
  /// The corresponding libcrypto call is `EVP_Digest(3)`.
  package static func sha256(_ bytes: [UInt8]) throws(CryptoError) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    var size: UInt32 = 0
    let status = digest.withUnsafeMutableBufferPointer { output in
      bytes.withUnsafeBufferPointer { input in
        EVP_Digest(input.baseAddress, input.count, output.baseAddress, &size, EVP_sha256(), nil)
      }
    }
    guard status == 1, size == 32 else { throw CryptoError("EVP_Digest") }
    return digest
  }

  /// Overwrites `bytes` with zeros in a way the compiler does not remove
  /// (`OPENSSL_cleanse(3)`), then empties it.
  package static func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
      if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
    }
    bytes.removeAll()
  }
}

/// An AES-256-GCM message: the nonce, the ciphertext (as long as the plaintext) and the tag.
package struct SealedBox: Sendable, Equatable {
  package var nonce: [UInt8]
  package var ciphertext: [UInt8]
  package var tag: [UInt8]

  package init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
    self.nonce = nonce
    self.ciphertext = ciphertext
    self.tag = tag
  }

  /// The box as one run of bytes: nonce, ciphertext, tag.
  package var combined: [UInt8] { nonce + ciphertext + tag }

  /// A box read back from ``combined``; `nil` when `bytes` is too short to hold a nonce and a
  /// tag.
  package init?(combined bytes: [UInt8]) {
    guard bytes.count >= Crypto.nonceLength + Crypto.tagLength else { return nil }
    nonce = Array(bytes[..<Crypto.nonceLength])
    ciphertext = Array(bytes[Crypto.nonceLength..<(bytes.count - Crypto.tagLength)])
    tag = Array(bytes[(bytes.count - Crypto.tagLength)...])
  }
}

/// A libcrypto call that failed: its name and the reason, never the data it was given.
package struct CryptoError: Error, Sendable, CustomStringConvertible {
  /// The libcrypto call (or the operation) that failed.
  package let call: String
  /// libcrypto's reason, or ours.
  package let reason: String
  /// Whether an authentication tag did not match (a wrong key, or changed bytes).
  package let isAuthenticationFailure: Bool

  package init(_ call: String, reason: String? = nil, authentication: Bool = false) {
    self.call = call
    self.isAuthenticationFailure = authentication
    if let reason {
      self.reason = reason
    } else {
      let code = ERR_get_error()
      ERR_clear_error()
      if code == 0 {
        self.reason = "failed"
      } else {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        let text = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self.reason = String(decoding: text, as: UTF8.self)
      }
    }
  }

  package var description: String { "\(call): \(reason)" }
}
