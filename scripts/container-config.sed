# The service image's baked /app/config.yaml, made from the repository's config.yaml (both image builds
# apply this file): state under /tmp, the writable volume of a read-only container, and the HTTP edge on
# all interfaces so that probes, /metrics and webhooks reach it from outside the container.
s#^\(  embedded_path: \)var/#\1/tmp/hummingbird/#
s#^\(  directory: \)var/#\1/tmp/hummingbird/#
s#^\(  host: \)127\.0\.0\.1#\10.0.0.0#
