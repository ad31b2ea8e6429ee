# The daemonsync image: `docker build -t daemonsync:dev .`
FROM rust:1.89-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends pkg-config libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin daemonsync

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/daemonsync /usr/local/bin/daemonsync
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/daemonsync"]
CMD ["sync", "--help"]
