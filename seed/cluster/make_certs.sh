#!/usr/bin/env bash
# Makes what a learner and its actors on other machines need, with openssl:
# a CA, the learner's certificate signed by it for the names actors dial, and
# a shared token.
#
#   seed/cluster/make_certs.sh OUT_DIR NAME [NAME ...]   (scripts/make_certs.sh runs it too)
#   scripts/make_certs.sh certs learner.example.org 10.0.0.5
#
# NAME: a host name (DNS) or an IP address the actors use to reach the learner;
# the certificate is valid for exactly these. OUT_DIR receives:
#   ca.crt    the CA certificate: give it to actors (--tls_ca_file)
#   ca.key    the CA's key: keep it off the cluster
#   tls.crt   the learner's certificate (--tls_cert_file)
#   tls.key   its key (--tls_key_file)
#   token     the shared token (--auth_token_file on both sides)
# File names match a Kubernetes TLS secret's keys (tls.crt, tls.key, ca.crt).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OUT_DIR NAME [NAME ...]  (NAME: the learner's host name or IP address)" >&2
  exit 2
fi
out="$1"; shift
command -v openssl >/dev/null || { echo "$0: openssl is not installed" >&2; exit 2; }
san=""
for name in "$@"; do
  if [[ "$name" =~ ^[0-9.]+$ || "$name" == *:* ]]; then kind=IP; else kind=DNS; fi
  san="${san:+$san,}$kind:$name"
done
mkdir -p "$out"
umask 077
cd "$out"
# The CA: self-signed, 10 years.
openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
  -subj "/CN=seed CA" -keyout ca.key -out ca.crt 2>/dev/null
# The learner's key and a request for its names, signed by the CA (2 years).
openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=$1" \
  -keyout tls.key -out tls.csr 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" > tls.ext
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 \
  -days 730 -extfile tls.ext -out tls.crt 2>/dev/null
rm -f tls.csr tls.ext ca.srl
# 32 random bytes as hex: the token actors present.
openssl rand -hex 32 > token
# Keys and token stay readable by their owner only (umask above).
chmod 644 ca.crt tls.crt
echo "wrote $out/{ca.crt,ca.key,tls.crt,tls.key,token} for $san"
