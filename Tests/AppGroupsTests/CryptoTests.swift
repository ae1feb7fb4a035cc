@testable import AppGroupsKeybag
import Testing

@Suite("Crypto: the calls into libcrypto")
struct CryptoTests {
  @Test func pbkdf2MatchesTheRFC7914Vector() throws {
    let key = try Crypto.deriveKey(
      passcode: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1)
    let hex = key.map { byte in
      let digits = String(byte, radix: 16)
      return digits.count == 1 ? "0" + digits : digits
    }.joined()
    #expect(hex == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc")
  }

  @Test func aSealedBoxOpensWithItsKeyAndAssociatedDataOnly() throws {
    let key = try Crypto.randomBytes(Crypto.keyLength)
    let other = try Crypto.randomBytes(Crypto.keyLength)
    let secret = Array("hunter2".utf8)
    let box = try Crypto.seal(secret, key: key, associatedData: Array("item-1".utf8))
    #expect(box.ciphertext.count == secret.count)
    #expect(box.ciphertext != secret)
    #expect(try Crypto.open(box, key: key, associatedData: Array("item-1".utf8)) == secret)
    let reread = try #require(SealedBox(combined: box.combined))
    #expect(try Crypto.open(reread, key: key, associatedData: Array("item-1".utf8)) == secret)
    #expect { try Crypto.open(box, key: other, associatedData: Array("item-1".utf8)) } throws: {
      ($0 as? CryptoError)?.isAuthenticationFailure == true
    }
    #expect { try Crypto.open(box, key: key, associatedData: Array("item-2".utf8)) } throws: {
      ($0 as? CryptoError)?.isAuthenticationFailure == true
    }
    var tampered = box
    tampered.ciphertext[0] ^= 1
    #expect { try Crypto.open(tampered, key: key, associatedData: Array("item-1".utf8)) } throws: {
      ($0 as? CryptoError)?.isAuthenticationFailure == true
    }
  }

  @Test func anEmptyPlaintextSealsAndOpens() throws {
    let key = try Crypto.randomBytes(Crypto.keyLength)
    let box = try Crypto.seal([], key: key)
    #expect(try Crypto.open(box, key: key) == [])
  }

  @Test func aShortKeyIsRefusedWithoutTouchingTheData() {
    #expect(throws: CryptoError.self) { try Crypto.seal([1, 2, 3], key: [0, 1]) }
  }
}
