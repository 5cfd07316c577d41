# The service: one image for every role, the role as its command (`serve`, the embedded default;
# `gateway`, `actor-host`, `encoder-node` in cluster mode). Built by deploy/images/build.sh from a
# staging folder holding the sources, the production node_modules (with Node 24 and the packager),
# the uWebSockets build, the recogniser's packages and model, and the VMAF-scoring ffmpeg.
ARG BASE
FROM ${BASE}
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg python3 tini \
  && rm -rf /var/lib/apt/lists/* \
  && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin media \
  && mkdir -p /data && chown media /data
COPY app/ /app/
WORKDIR /app
# The recogniser runs on Debian's Python 3.11 with the packages of the setup's venv (same ABI).
ENV PATH=/app/node_modules/.bin:$PATH \
    NODE_ENV=production \
    MEDIA_DATA_DIR=/data \
    MEDIA_HTTP_HOST=0.0.0.0 \
    MEDIA_ASR_PYTHON=/usr/bin/python3 \
    PYTHONPATH=/app/.asr-site \
    TSX_TSCONFIG_PATH=/app/tsconfig.json
USER media
# tsx transpiles the sources at the first start and keeps the result under /tmp: done once here,
# every container of the image starts from the warm cache instead of paying it (seconds per role).
RUN node --import tsx -e 'await import("/app/main/server.ts"); await import("/app/main/upload-cli.ts")' && test -n "$(ls /tmp/tsx-*)"
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --start-period=180s --retries=3 CMD ["node", "/app/deploy/images/healthcheck.mjs"]
STOPSIGNAL SIGTERM
# tini forwards SIGTERM to Node (which drains) and reaps the encoders' children.
ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/bin/media.js"]
CMD ["serve"]
