// CAppGroupsCrypto: the system's libcrypto (OpenSSL 3, Debian's libssl-dev), for the
// keybag and the keychain only. The preference core never imports it.
//
// Only the EVP interface is used: AES-256-GCM, PBKDF2-HMAC-SHA256, the system's random
// generator and OPENSSL_cleanse. Nothing here is written by hand.
#ifndef CAPPGROUPS_CRYPTO_H
#define CAPPGROUPS_CRYPTO_H

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#endif
