# Switchyard container image (docs/deployment.md).
#   docker build -t switchyard .
#   docker run -p 8080:8080 -v "$PWD/config:/app/config" switchyard
# The build stage installs every dependency and compiles the gateway (dist/) and the web editor
# (ui/dist); the runtime stage holds production dependencies and those outputs only.
# Both run on Node 24 LTS, the Node `npm ci` installs for the npm scripts (package.json).

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN node scripts/build-ui.mjs --force && node scripts/build.mjs --force

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# No dev tools (tsx, esbuild, the test and build tools) and no optional packages: those are the
# Node binaries npm scripts use in a checkout (node-linux-*), which the image has as its own node.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
COPY --from=build /src/ui/dist ./ui/dist
COPY bin ./bin
COPY docs ./docs
COPY --chown=node:node config ./config
# The official image's unprivileged user (uid 1000); it owns config/ so Admin API writes persist.
USER node
# Data plane (listener.port) and Admin API / editor (admin.port) of the shipped config/system.yaml.
# The shipped admin listener binds 127.0.0.1: mount a system.yaml with admin.bind 0.0.0.0 and a
# password (ADMIN_PASSWORD) to reach it from outside the container.
EXPOSE 8080 9090
VOLUME ["/app/config"]
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ADMIN_PORT || 9090) + '/healthz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/switchyard.js"]
CMD ["--system-config", "config/system.yaml", "--gateway-config", "config/gateway.yaml"]
