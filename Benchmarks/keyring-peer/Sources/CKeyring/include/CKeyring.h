// Store and lookup of one password by service and account, as libsecret's variadic calls take
// them; what Swift cannot call directly.
#ifndef CKEYRING_H
#define CKEYRING_H

#include <libsecret/secret.h>

/// secret_password_store_sync in the default collection; 1 on success, else 0 and *error set.
int ckeyring_store(const char *service, const char *account, const char *password, GError **error);

/// secret_password_lookup_sync; the password (free it with secret_password_free) or NULL.
char *ckeyring_lookup(const char *service, const char *account, GError **error);

#endif
