#!/usr/bin/env bash
# Build the Cluster API in-cluster IPAM provider (the reference IPAM provider: InClusterIPPool and
# GlobalInClusterIPPool, which answer IPAddressClaims with IPAddresses) from its published Go module
# sigs.k8s.io/cluster-api-ipam-provider-in-cluster (main package at the module root) into
# ~/.cache/hereabouts/capi-in-cluster-<version>/capi-in-cluster and print its path (first run: ~3 min on an idle VM,
# longer at build-go-tool.sh's low priority).
#
# It reads and writes ipam.cluster.x-k8s.io/v1beta2 IPAddressClaims and IPAddresses (sigs.k8s.io/cluster-api v1.11
# API), and cluster.x-k8s.io/v1beta2 Clusters (it skips a claim whose spec.clusterName names a paused or missing
# Cluster). Its own CRDs are in the module, config/crd/bases/ (apply them server-side; no conversion webhook in the
# bases, so use their storage version v1alpha2). Out of a cluster, without webhooks, metrics or leader election:
#   capi-in-cluster --kubeconfig <file> --webhook-port=0 --diagnostics-address=0 --health-probe-bind-address=0
# Env: HEREABOUTS_CAPI_IN_CLUSTER_VERSION (default below), HEREABOUTS_CACHE.
set -euo pipefail
# v1.1.0: the newest release the Go module proxy serves (v1.2.0 is not); it needs Go 1.26.2, no newer toolchain.
version=${HEREABOUTS_CAPI_IN_CLUSTER_VERSION:-v1.1.0}
module=sigs.k8s.io/cluster-api-ipam-provider-in-cluster
exec "$(dirname "$0")/build-go-tool.sh" capi-in-cluster "$module" "$version" "$module"
