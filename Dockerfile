# syntax=docker/dockerfile:1
# Build: a static binary, no cgo.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/api ./cmd/api

# Run: nothing but the binary and CA certificates, as a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/api /api
# Numeric, so that a pod's runAsNonRoot can verify it (the kubelet refuses a user name):
# distroless's nonroot is 65532.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/api"]
