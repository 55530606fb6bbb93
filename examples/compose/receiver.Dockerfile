# The compose example's webhook receiver (receiver/main.go), built from the
# repository root (the compose file's build context).
FROM golang:1.26 AS build
WORKDIR /src
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /receiver ./examples/compose/receiver

FROM scratch
COPY --from=build /receiver /receiver
USER 65532:65532
ENTRYPOINT ["/receiver"]
