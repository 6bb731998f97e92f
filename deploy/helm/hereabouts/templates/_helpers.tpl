{{/* The namespace of every namespaced object: .Values.namespace, or the release's when empty. */}}
{{- define "hereabouts.namespace" -}}
{{- default .Release.Namespace .Values.namespace -}}
{{- end -}}

{{/* Labels on object metadata: the selector labels plus Helm's bookkeeping (never in selectors: those are immutable). */}}
{{- define "hereabouts.labels" -}}
app.kubernetes.io/name: hereabouts
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels: exactly deploy/'s, so a cluster installed with kubectl can move to the chart. */}}
{{- define "hereabouts.selectorLabels" -}}
app.kubernetes.io/name: hereabouts
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "hereabouts.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/* The Lease name: --leader-elect-name, or the executable's default. The Role names it too. */}}
{{- define "hereabouts.leaseName" -}}
{{- $name := index .Values.controller.flags "leader-elect-name" -}}
{{- if kindIs "invalid" $name -}}hereabouts-controller{{- else -}}{{ $name }}{{- end -}}
{{- end -}}

{{/* The port of an address flag (":9090" -> 9090); empty when the flag turns the server off. */}}
{{- define "hereabouts.port" -}}
{{- if . -}}{{ regexReplaceAll "^.*:" (toString .) "" }}{{- end -}}
{{- end -}}

{{/* Every flag of `hereabouts controller --help`, in its order; null values are left to the executable. */}}
{{- define "hereabouts.controllerFlagNames" -}}
kubeconfig context namespace leader-elect-namespace leader-elect-name lease-duration renew-deadline retry-period identity reconcile-interval cleanup-terminating cleanup-disrupted terminal-grace verify-network-status pending-grace reservation-grace slice-drain-grace sticky-grace sticky pool-status claims metrics-addr health-addr log-level once
{{- end -}}
