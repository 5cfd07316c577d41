#!/usr/bin/env bash
# Builds the project's images from its own Debian base, with no image registry:
#
#   media-base:<codename>-<hash>   debootstrap (minbase + ca-certificates) from this machine's own
#                                  Debian mirror, imported with `docker import`
#   media:local                    the service, every role (Dockerfile.app)
#   media-kafka:<v>, media-cassandra:<v>, media-minio:local   the peers of the compose files and of
#                                  the container-backed cluster tests, from what infra/ fetches
#
#   bash deploy/images/build.sh [all|base|app|peers]    (all by default)
#
# Each image is labelled with a hash of its inputs and rebuilt only when they changed, so a second
# run costs seconds. Needs a running engine (deploy/engine.sh up) and what scripts/setup.sh
# installs (node_modules, the jars, MinIO, the recogniser, the VMAF ffmpeg).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
DOCKER="$(if [[ -x /usr/bin/docker ]]; then echo /usr/bin/docker; else command -v docker; fi)"
export DOCKER_BUILDKIT=0 # the classic builder: Debian's engine ships no buildx
STAGE="$ROOT/.cache/images"
INFRA="${MEDIA_INFRA_DIR:-$ROOT/.infra}"
KAFKA_VERSION=3.9.2
CASSANDRA_VERSION=5.0.9

now() { date +%s; }
say() { echo "images: $*" >&2; }

# label_of <image>: the input hash an existing image was built from, or nothing.
label_of() { "$DOCKER" image inspect --format '{{ index .Config.Labels "media.inputs" }}' "$1" 2>/dev/null || true; }

# build <image> <dockerfile> <context> <hash>: docker build unless the image has this hash already.
build() {
  local image="$1" file="$2" context="$3" hash="$4" t0
  hash="$hash-${BASE##*-}"
  if [[ "$(label_of "$image")" == "$hash" ]]; then return 0; fi
  t0=$(now)
  "$DOCKER" build -q --build-arg BASE="$BASE" --label media.inputs="$hash" -f "$file" -t "$image" "$context" >/dev/null ||
    { say "$image did not build"; return 1; }
  say "$image built in $(($(now) - t0)) s"
}

# The Debian release and mirrors this machine's apt uses: the base is the same release from the
# same place (no host is named here).
codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
mirror="$(apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(COMPONENT)' | awk -v c="$codename" '$2 == c && $3 == "main" { print $1; exit }')"
security="$(apt-get indextargets --format '$(REPO_URI) $(CODENAME) $(COMPONENT)' | awk -v c="$codename-security" '$2 == c && $3 == "main" { print $1; exit }')"
[[ -n "$mirror" ]] || { say "no Debian mirror for $codename in this machine's apt sources"; exit 1; }

base() {
  if "$DOCKER" image inspect "$BASE" >/dev/null 2>&1; then return 0; fi
  command -v debootstrap >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  local t0 rootfs="$STAGE/base-rootfs"
  t0=$(now)
  rm -rf "$rootfs" && mkdir -p "$rootfs"
  debootstrap --variant=minbase --include=ca-certificates "$codename" "$rootfs" "$mirror" >"$STAGE/debootstrap.log" 2>&1 ||
    { say "debootstrap failed:"; tail -n 20 "$STAGE/debootstrap.log" >&2; exit 1; }
  {
    echo "deb $mirror $codename main"
    echo "deb $mirror $codename-updates main"
    [[ -z "$security" ]] || echo "deb $security $codename-security main"
  } >"$rootfs/etc/apt/sources.list"
  # Smaller and quieter images: no recommends, no documentation, no apt caches.
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$rootfs/etc/apt/apt.conf.d/90media"
  printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n' >"$rootfs/etc/dpkg/dpkg.cfg.d/90media"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | "$DOCKER" import -c 'CMD ["/bin/bash"]' -c 'ENV LANG=C.UTF-8' - "$BASE" >/dev/null
  rm -rf "$rootfs"
  say "$BASE from debootstrap in $(($(now) - t0)) s"
}

# hash_tree <dir>: names, sizes and times of every file under dir (content changes move them).
hash_tree() { (cd "$1" && find . -type f -printf '%P %s %T@\n' | LC_ALL=C sort | sha256sum | cut -c1-16); }

app() {
  local ctx="$STAGE/app" t0
  t0=$(now)
  rm -rf "$ctx" && mkdir -p "$ctx/app/.cache" "$ctx/app/deploy"
  # The sources as git tracks them (plus what is not committed yet), hard-linked: no copy.
  local dirs=(actors bin console delivery encoder-node gateway main proto src wire infra/cql)
  for d in "${dirs[@]}"; do mkdir -p "$ctx/app/$(dirname "$d")"; cp -al "$d" "$ctx/app/$d"; done
  cp -al deploy/images "$ctx/app/deploy/images"
  cp -al package.json package-lock.json tsconfig.json "$ctx/app/"
  rm -rf "$ctx/app/console/node_modules"
  find "$ctx/app" -name '*.spec.ts' -delete
  # Production packages only: npm prune on a hard-linked copy (it only unlinks, the originals stay).
  cp -al node_modules "$ctx/app/node_modules"
  (cd "$ctx/app" && npm prune --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  rm -f "$ctx/app/node_modules/.package-lock.json" # rewritten by every prune: it would change the hash
  cp -al .cache/uws "$ctx/app/.cache/uws"
  mkdir -p "$ctx/app/.cache/vmaf" && cp -al .cache/vmaf/ffmpeg "$ctx/app/.cache/vmaf/ffmpeg"
  cp -al .cache/asr "$ctx/app/.cache/asr"
  local site
  site="$(.venv-asr/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  cp -al "$site" "$ctx/app/.asr-site"
  build media:local deploy/images/Dockerfile.app "$ctx" "$(hash_tree "$ctx")-$(sha256sum deploy/images/Dockerfile.app | cut -c1-8)"
  say "media:local staged and checked in $(($(now) - t0)) s"
}

peers() {
  local ctx="$STAGE/kafka"
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp -al "$INFRA/cache/kafka-$KAFKA_VERSION/lib" "$ctx/lib"
  cp -al infra/kafka/log4j.properties infra/kafka/tools-log4j.properties deploy/images/kafka-entrypoint.sh "$ctx/"
  build "media-kafka:$KAFKA_VERSION" deploy/images/Dockerfile.kafka "$ctx" "$(hash_tree "$ctx")-$(sha256sum deploy/images/Dockerfile.kafka | cut -c1-8)"

  ctx="$STAGE/cassandra"
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp -al "$INFRA/cache/cassandra-$CASSANDRA_VERSION/lib" "$ctx/lib"
  cp -al infra/cassandra/logback.xml infra/cassandra/jvm17-server.options deploy/images/cassandra.yaml deploy/images/cassandra-entrypoint.sh "$ctx/"
  build "media-cassandra:$CASSANDRA_VERSION" deploy/images/Dockerfile.cassandra "$ctx" "$(hash_tree "$ctx")-$(sha256sum deploy/images/Dockerfile.cassandra | cut -c1-8)"

  ctx="$STAGE/minio"
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp -al "$INFRA/bin/minio" "$INFRA/bin/mc" "$ctx/"
  cp -al deploy/images/minio-entrypoint.sh "$ctx/"
  build media-minio:local deploy/images/Dockerfile.minio "$ctx" "$(hash_tree "$ctx")-$(sha256sum deploy/images/Dockerfile.minio | cut -c1-8)"
}

# The base's tag: the release, the mirrors and the recipe (base() itself), not the rest of this file.
BASE="media-base:$codename-$(printf '%s\n' "$codename" "$mirror" "$security" "$(declare -f base)" | sha256sum | cut -c1-12)"

# tidy: the images this script built before and has since replaced (a rebuilt image leaves its
# predecessor untagged; a new base leaves the old tag): each app image is 2.4 GB, and a machine that
# builds a few times a day ran out of disk in a week.
tidy() {
  "$DOCKER" image prune -f --filter label=media.inputs >/dev/null
  local old
  for old in $("$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}' media-base); do
    [[ "$old" == "$BASE" ]] || "$DOCKER" image rm "$old" >/dev/null 2>&1 || true
  done
}

mkdir -p "$STAGE"
case "${1:-all}" in
  base) base ;;
  app) base && app ;;
  peers) base && peers ;;
  all) base && peers && app ;;
  *) echo "usage: bash deploy/images/build.sh [all|base|app|peers]" >&2; exit 2 ;;
esac
tidy
