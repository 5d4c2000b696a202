# Tally server image: build stage (dev dependencies, esbuild) → runtime stage (production
# dependencies and dist/ only), running as the unprivileged `node` user. docs/deploy.md.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY client/package.json client/
COPY scripts scripts
COPY src src
# `npm ci` runs the prepare script, which builds dist/.
RUN npm ci --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/client/package.json client/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist dist
# /data: the embedded store and its operator token, when there is no DATABASE_URL.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself as PID 1 (not npm): SIGTERM from `docker stop` reaches the server, which drains and exits.
STOPSIGNAL SIGTERM
CMD ["node", "dist/server.js"]
