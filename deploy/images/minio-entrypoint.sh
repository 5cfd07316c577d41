#!/usr/bin/env bash
# MinIO in the project's image: the server, then the buckets named in MINIO_BUCKETS (comma
# separated) made once it answers, so a compose file needs no one-shot helper container. SIGTERM
# is passed on to the server.
set -euo pipefail
rm -f /tmp/ready
minio server /data --address :9000 --quiet &
server=$!
trap 'kill -TERM "$server" 2>/dev/null' TERM INT
export MC_HOST_self="http://${MINIO_ROOT_USER}:${MINIO_ROOT_PASSWORD}@127.0.0.1:9000"
if [[ -n "${MINIO_BUCKETS:-}" ]]; then
  for _ in $(seq 1 120); do mc --quiet ready self >/dev/null 2>&1 && break; sleep 0.5; done
  IFS=',' read -ra buckets <<<"$MINIO_BUCKETS"
  for b in "${buckets[@]}"; do mc --quiet mb --ignore-existing "self/$b" >/dev/null; done
fi
touch /tmp/ready # the compose file's health check: serving, buckets made
wait "$server"
