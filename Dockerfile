# Multi-stage build of a static sluice in a small non-root image.
#   docker build -t sluice .
#   docker run -p 8080:8080 -v sluice-state:/var/lib/sluice -v sluice-log:/var/log/sluice sluice
# It listens on 0.0.0.0:8080 so that the port can be published. A
# provider with api_key_env injects a key, and then the gateway refuses a
# non-loopback address unless client auth (auth.keys) is on: mount a
# config that sets it (SLUICE_CONFIG=/etc/sluice/sluice.yaml).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/sluice ./cmd/sluice

FROM alpine:3.22
RUN apk add --no-cache ca-certificates \
 && adduser -D -H -u 10001 sluice \
 && mkdir -p /var/lib/sluice /var/log/sluice \
 && chown sluice:sluice /var/lib/sluice /var/log/sluice
COPY --from=build /out/sluice /usr/local/bin/sluice
USER sluice
ENV XDG_STATE_HOME=/var/lib
VOLUME ["/var/lib/sluice", "/var/log/sluice"]
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
