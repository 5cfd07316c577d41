# shellcheck shell=bash
# Helpers shared by infra/kafka.sh and infra/cassandra.sh. Sourced, not run.
#
# Layout under $MEDIA_INFRA_DIR (default: <repo>/.infra, ignored by git):
#   cache/<name>-<version>/lib/   jars copied by `mvn dependency:copy-dependencies`
#   <name>/                       generated config, <name>.pid, <name>.log
#   <name>/data/                  server state (removed by `down --clean`)

INFRA_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$INFRA_SRC/.." && pwd)"
MEDIA_INFRA_DIR="${MEDIA_INFRA_DIR:-$REPO_ROOT/.infra}"
JAVA="${JAVA:-java}"
MVN="${MVN:-mvn}"

log() { printf '[%s] %s\n' "$SERVICE" "$*"; }
die() { printf '[%s] error: %s\n' "$SERVICE" "$*" >&2; exit 1; }

now_ms() { date +%s%3N; }
# elapsed seconds with one decimal since a now_ms timestamp
since() { local d=$(( $(now_ms) - $1 )); printf '%d.%d' $((d / 1000)) $(((d % 1000) / 100)); }

require() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null 2>&1 || die "'$c' is not on PATH"; done
}

# fetch_jars <pom> <lib dir> <maven -D args...>
# Copies the pom's runtime dependency closure into <lib dir> once; a
# .complete marker makes later calls no-ops. Downloads go through the
# user's normal Maven configuration (~/.m2/settings.xml, local repository).
fetch_jars() {
  local pom="$1" lib="$2"; shift 2
  if [[ -f "$lib/.complete" ]]; then return 0; fi
  require "$MVN"
  local tmp="$lib.tmp.$$" t0
  t0=$(now_ms)
  log "fetching jars with mvn into $lib (first run downloads from the Maven repository)"
  rm -rf "$tmp"; mkdir -p "$tmp"
  if ! "$MVN" -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
      -DoutputDirectory="$tmp" "$@" >"$tmp.mvn.log" 2>&1; then
    grep -E '^\[(ERROR|WARNING)\]' "$tmp.mvn.log" | head -n 40 >&2 || tail -n 40 "$tmp.mvn.log" >&2
    rm -rf "$tmp"
    die "mvn dependency:copy-dependencies failed (full output in $tmp.mvn.log)"
  fi
  rm -f "$tmp.mvn.log"
  rm -rf "$lib"; mv "$tmp" "$lib"
  date -u +%FT%TZ >"$lib/.complete"
  log "fetched $(find "$lib" -name '*.jar' | wc -l) jars ($(du -sh "$lib" | cut -f1)) in $(since "$t0")s"
}

# pid_running <pidfile> <marker>: the pid in the file is alive and its
# command line contains <marker> (guards against a recycled pid).
pid_running() {
  local pidfile="$1" marker="$2" pid
  [[ -f "$pidfile" ]] || return 1
  pid=$(<"$pidfile")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker"
}

# port_open <host> <port>: something accepts TCP connections there.
port_open() {
  # shellcheck disable=SC2016 # expanded by the inner shell
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null
}

# ensure_ports_free <host> <port>...: refuse to start over a foreign listener.
ensure_ports_free() {
  local host="$1" p; shift
  for p in "$@"; do
    [[ -z "$p" ]] && continue
    if port_open "$host" "$p"; then
      die "port $host:$p is already in use by another process"
    fi
  done
}

# spawn <pidfile> <logfile> <cmd...>: start detached (own session, stdin from
# /dev/null, stdout+stderr appended to the log); the pid file holds the
# pid of <cmd> itself (the shell execs it).
spawn() {
  local pidfile="$1" logfile="$2"; shift 2
  if [[ -s "$logfile" ]]; then mv -f "$logfile" "$logfile.prev"; fi
  : >"$logfile"
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" \
    </dev/null >>"$logfile" 2>&1 &
  local i
  for i in $(seq 1 50); do [[ -s "$pidfile" ]] && return 0; sleep 0.1; done
  die "process did not start (no pid file)"
}

# stop_pid <pidfile> <marker> <timeout seconds>: TERM, wait, then KILL.
stop_pid() {
  local pidfile="$1" marker="$2" timeout="$3" pid t0 i
  if ! pid_running "$pidfile" "$marker"; then
    log "not running"
    rm -f "$pidfile"
    return 0
  fi
  pid=$(<"$pidfile")
  t0=$(now_ms)
  log "stopping pid $pid (TERM, KILL after ${timeout}s)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still alive after ${timeout}s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$pidfile"
  log "stopped in $(since "$t0")s"
}

# died_during_start <pidfile> <marker> <logfile>: fail with the log tail.
died_during_start() {
  local pidfile="$1" marker="$2" logfile="$3"
  if ! pid_running "$pidfile" "$marker"; then
    printf '[%s] process exited during start; last lines of %s:\n' "$SERVICE" "$logfile" >&2
    tail -n 40 "$logfile" >&2 || true
    rm -f "$pidfile"
    exit 1
  fi
}

# parse_down_args "$@": sets CLEAN=1 on --clean.
# shellcheck disable=SC2034 # CLEAN is read by the caller
parse_down_args() {
  CLEAN=0
  local a
  for a in "$@"; do
    case "$a" in
      --clean) CLEAN=1 ;;
      *) die "unknown option for down: $a (only --clean)" ;;
    esac
  done
}

# Secure mode (KAFKA_SECURE=1, CASSANDRA_SECURE=1): one self-signed CA and one server certificate
# for 127.0.0.1 and localhost, shared by both peers, under $MEDIA_INFRA_DIR/tls:
#   ca.pem          the CA clients trust (MEDIA_KAFKA_SSL_CA_FILE, MEDIA_CASSANDRA_SSL_CA_FILE)
#   server.pem      the server's key (PKCS#8, unencrypted) followed by its certificate
#   client.pem, client.key   a client certificate of the same CA (for servers that ask for one)
# Made once; kept by `down --clean` (delete the folder for new ones). Two peers starting at once
# each build a copy aside and the first rename wins.
TLS_DIR="$MEDIA_INFRA_DIR/tls"
ensure_tls() {
  [[ -f "$TLS_DIR/server.pem" ]] && return 0
  require openssl
  local tmp="$TLS_DIR.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp" "$(dirname "$TLS_DIR")"
  (
    cd "$tmp"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj "/CN=media infra CA" -keyout ca.key -out ca.pem \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    for who in server client; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=media infra $who" -keyout "$who.key" -out "$who.csr"
      printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
        "extendedKeyUsage=$([[ $who == server ]] && echo serverAuth || echo clientAuth)" >"$who.ext"
      openssl x509 -req -in "$who.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 -extfile "$who.ext" -out "$who.crt"
      rm -f "$who.csr" "$who.ext"
    done
    cat server.key server.crt >server.pem
    mv client.crt client.pem
    chmod 600 ./*.key server.pem
  ) >/dev/null 2>&1 || { rm -rf "$tmp"; die "openssl could not make the certificates"; }
  if mv -T "$tmp" "$TLS_DIR" 2>/dev/null; then
    log "made a CA and a server certificate for 127.0.0.1 in $TLS_DIR"
  else
    rm -rf "$tmp" # the other peer's copy won
  fi
}
