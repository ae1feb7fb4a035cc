#include "CKeyring.h"

// The schema of the benchmark's items: a service and an account, as a keychain's generic
// password is found.
static const SecretSchema *schema(void) {
  static const SecretSchema value = {
    "org.appgroups.Benchmark", SECRET_SCHEMA_NONE,
    {
      {"service", SECRET_SCHEMA_ATTRIBUTE_STRING},
      {"account", SECRET_SCHEMA_ATTRIBUTE_STRING},
      {NULL, 0},
    }};
  return &value;
}

int ckeyring_store(const char *service, const char *account, const char *password, GError **error) {
  return secret_password_store_sync(
    schema(), SECRET_COLLECTION_DEFAULT, "benchmark item", password, NULL, error,
    "service", service, "account", account, NULL) ? 1 : 0;
}

char *ckeyring_lookup(const char *service, const char *account, GError **error) {
  return secret_password_lookup_sync(schema(), NULL, error, "service", service, "account", account, NULL);
}
