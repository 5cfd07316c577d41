#!/usr/bin/env bash
# Cassandra in the project's image: one node configured by the environment the way the official
# cassandra image is (CASSANDRA_CLUSTER_NAME, CASSANDRA_NUM_TOKENS, CASSANDRA_AUTHENTICATOR,
# MAX_HEAP_SIZE, HEAP_NEWSIZE, JVM_EXTRA_OPTS; `cassandra -f` as the command), with the JVM flags of
# infra/cassandra.sh. The JVM replaces this shell: SIGTERM reaches it.
set -euo pipefail

CONF="${CASSANDRA_CONF:-/etc/cassandra}"
LIB=/opt/cassandra/lib
[[ "${1:-cassandra}" == cassandra ]] || exec "$@"

ip="$(hostname -i | awk '{print $1}')"
sed -ri \
  -e "s/^cluster_name:.*/cluster_name: '${CASSANDRA_CLUSTER_NAME:-media}'/" \
  -e "s/^num_tokens:.*/num_tokens: ${CASSANDRA_NUM_TOKENS:-1}/" \
  -e "s/^listen_address:.*/listen_address: $ip/" \
  -e "s/^broadcast_rpc_address:.*/broadcast_rpc_address: $ip/" \
  -e "s/- seeds:.*/- seeds: \"$ip:7000\"/" \
  -e "s/^authenticator:.*/authenticator: ${CASSANDRA_AUTHENTICATOR:-AllowAllAuthenticator}/" \
  "$CONF/cassandra.yaml"
mkdir -p /var/lib/cassandra/{data,commitlog,saved_caches,hints,cdc_raw} "$CONF/triggers"

heap="${MAX_HEAP_SIZE:-1G}"
jamm="$(find "$LIB" -maxdepth 1 -name 'jamm-*.jar' | head -n 1)"
# JDK 17 module flags from Cassandra 5.0's conf/jvm17-server.options, as infra/cassandra.sh passes them.
mapfile -t jpms < <(grep -v '^#' /opt/cassandra/jvm17-server.options | tr ' ' '\n' | grep -v '^$')
# shellcheck disable=SC2086
exec java -Xms"$heap" -Xmx"$heap" ${HEAP_NEWSIZE:+-Xmn$HEAP_NEWSIZE} \
  -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1 -XX:MaxGCPauseMillis=300 \
  -XX:+PerfDisableSharedMem -XX:+ExitOnOutOfMemoryError -ea -da:net.openhft... \
  -Djava.net.preferIPv4Stack=true \
  "${jpms[@]}" \
  -Dio.netty.tryReflectionSetAccessible=true \
  -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11 \
  -javaagent:"$jamm" \
  -Dcassandra.config="file://$CONF/cassandra.yaml" \
  -Dcassandra.storagedir=/var/lib/cassandra \
  -Dcassandra.logdir=/var/lib/cassandra \
  -Dcassandra.triggers_dir="$CONF/triggers" \
  -Dcassandra-foreground=yes \
  -Dlogback.configurationFile="file:///opt/cassandra/logback.xml" \
  -Dcassandra.skip_wait_for_gossip_to_settle=0 \
  -Dcassandra.ring_delay_ms=100 \
  -Dcassandra.superuser_setup_delay_ms=0 \
  -Dcassandra.shutdown_announce_in_ms=0 \
  ${JVM_EXTRA_OPTS:-} \
  -cp "$CONF:$LIB/*" org.apache.cassandra.service.CassandraDaemon
