# The image holds one file: the self-contained executable (Node embedded). Build it first: npm run build.
# distroless/cc carries glibc, libstdc++ and libgcc_s, all the executable needs.
FROM gcr.io/distroless/cc-debian12
COPY dist/hereabouts /hereabouts
ENTRYPOINT ["/hereabouts"]
