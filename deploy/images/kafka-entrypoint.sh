#!/usr/bin/env bash
# Kafka in the project's image: a single KRaft node configured by the environment the way the
# official apache/kafka image is (KAFKA_FOO_BAR=v becomes foo.bar=v; CLUSTER_ID formats the storage
# once), so the same settings start either image. The JVM replaces this shell: SIGTERM reaches it.
set -euo pipefail

CONFIG=/var/lib/kafka/server.properties
: "${CLUSTER_ID:?CLUSTER_ID is required (22 characters of base64url: the KRaft cluster id)}"
mkdir -p /var/lib/kafka/data

{
  echo "# written by kafka-entrypoint.sh from the environment"
  echo "log.dirs=/var/lib/kafka/data"
  while IFS='=' read -r name value; do
    case "$name" in
      KAFKA_HEAP_OPTS | KAFKA_JVM_OPTS | KAFKA_VERSION) continue ;;
      KAFKA_*) ;;
      *) continue ;;
    esac
    key="${name#KAFKA_}"
    key="${key,,}"
    echo "${key//_/.}=$value"
  done < <(env)
} >"$CONFIG"

if [[ ! -f /var/lib/kafka/data/meta.properties ]]; then
  java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j.configuration=file:/opt/kafka/tools-log4j.properties \
    -cp '/opt/kafka/lib/*' kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$CONFIG" >/dev/null
fi

# shellcheck disable=SC2086
exec java ${KAFKA_HEAP_OPTS:--Xms512m -Xmx512m} \
  -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
  -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
  -Djava.net.preferIPv4Stack=true \
  -Dlog4j.configuration=file:/opt/kafka/log4j.properties \
  ${KAFKA_JVM_OPTS:-} \
  -cp '/opt/kafka/lib/*' kafka.Kafka "$CONFIG"
