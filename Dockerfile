# The image holds one file: the self-contained executable (Node 24 embedded; docs/packaging.md). Build it first with
# `npm run build`, then `docker build -t <registry>/hereabouts:<version> .` and point deploy/kustomization.yaml at it.
# distroless/cc carries glibc, libstdc++ and libgcc_s: all the executable needs. No shell, no package manager.
# The same image runs the node installer (as root: it writes host dirs) and the controller (non-root, set by the
# Deployment); both name /hereabouts in their command.
FROM gcr.io/distroless/cc-debian12
COPY dist/hereabouts /hereabouts
ENTRYPOINT ["/hereabouts"]
