{{/* Names and labels shared by every template. */}}
{{- define "switchyard.name" -}}
{{ .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "switchyard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{ .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else -}}
{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end -}}
{{- end -}}

{{- define "switchyard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchyard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "switchyard.labels" -}}
{{ include "switchyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "switchyard.secretName" -}}
{{- if .Values.admin.existingSecret -}}
{{ .Values.admin.existingSecret }}
{{- else -}}
{{ include "switchyard.fullname" . }}
{{- end -}}
{{- end -}}

{{/* Metrics auth is on: metricsAuth.enabled or serviceMonitor.enabled ("true" or empty). */}}
{{- define "switchyard.metricsAuth" -}}
{{- if or .Values.metricsAuth.enabled .Values.serviceMonitor.enabled -}}true{{- end -}}
{{- end -}}

{{/* The keys of system.yaml the chart sets from other values; they win over config.system. */}}
{{- define "switchyard.systemFromChart" -}}
listener:
  port: {{ .Values.ports.http }}
admin:
  port: {{ .Values.ports.admin }}
  {{- if include "switchyard.metricsAuth" . }}
  metrics_auth:
    bearer_token: ${METRICS_TOKEN}
  {{- end }}
{{- if .Values.kubernetes.enabled }}
# Routes come from the Gateway API objects; the Lease is in the pod's namespace ($POD_NAMESPACE).
config:
  source: kubernetes
  kubernetes:
    controller_name: {{ .Values.kubernetes.controllerName }}
    port_offset: {{ .Values.kubernetes.portOffset }}
    {{- with .Values.kubernetes.watchNamespaces }}
    watch_namespaces: {{ toYaml . | nindent 6 }}
    {{- end }}
    leader_election:
      enabled: {{ .Values.kubernetes.leaderElection.enabled }}
      lease_name: {{ .Values.kubernetes.leaderElection.leaseName }}
      lease_duration_seconds: {{ .Values.kubernetes.leaderElection.leaseDurationSeconds }}
{{- end }}
{{- end -}}

{{/* system.yaml: config.system with the chart's keys merged over it. */}}
{{- define "switchyard.systemConfig" -}}
{{- $system := deepCopy .Values.config.system -}}
{{- $chart := include "switchyard.systemFromChart" . | fromYaml -}}
{{- mergeOverwrite $system $chart | toYaml -}}
{{- end -}}

{{/* The ConfigMap's data; its sha256 is the pods' checksum/config annotation. */}}
{{- define "switchyard.configData" -}}
# Read once at startup; a change rolls the pods (see the checksum annotations in the Deployment).
system.yaml: |
  {{- include "switchyard.systemConfig" . | nindent 2 }}
gateway.yaml: |
  {{- .Values.config.gateway | nindent 2 }}
{{- end -}}

{{/*
Checks at render time. Several pods that each read gateway.yaml from the ConfigMap would each take
Admin API and editor writes in memory only: a write reaches the pod behind the port-forward and is
lost on its restart. So more than one pod needs a shared source (etcd, or the Gateway API objects).
*/}}
{{- define "switchyard.validate" -}}
{{- if or .Values.config.logLevel .Values.config.logFormat .Values.config.shutdownTimeoutSeconds -}}
{{- fail "config.logLevel, config.logFormat and config.shutdownTimeoutSeconds moved to config.system (logging.level, logging.format, timeouts.shutdown_timeout_seconds) in chart 0.1.3" -}}
{{- end -}}
{{- $declared := dig "config" "source" "" .Values.config.system -}}
{{- if and .Values.kubernetes.enabled (eq $declared "etcd") -}}
{{- fail "config.system.config.source is etcd and kubernetes.enabled is true (the default): the Gateway API controller would replace it. Set kubernetes.enabled: false to use etcd (docs/kubernetes.md#helm)" -}}
{{- end -}}
{{- $source := include "switchyard.systemConfig" . | fromYaml | dig "config" "source" "file" -}}
{{- $pods := .Values.replicaCount -}}
{{- if .Values.autoscaling.enabled -}}{{- $pods = .Values.autoscaling.maxReplicas -}}{{- end -}}
{{- if and (gt (int $pods) 1) (eq $source "file") -}}
{{- fail (printf "%v pods (replicaCount, or autoscaling.maxReplicas) with config.system.config.source 'file': each pod would keep Admin API and editor writes to itself and lose them on restart. Set config.system.config.source: etcd (with config.system.config.etcd.endpoints), or kubernetes.enabled: true, or replicaCount: 1 (docs/deployment.md#helm)" $pods) -}}
{{- end -}}
{{- end -}}

{{/*
A value of the chart's Secret, base64: the one set in values, else the one the release's Secret
already holds (`lookup`: kept across upgrades; empty under `helm template`), else one generated
once per render (shared by the Secret and the Deployment's checksum). Arguments: (list $ key set length).
*/}}
{{- define "switchyard.secretValue" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $set := index . 2 -}}
{{- $previous := get (lookup "v1" "Secret" $root.Release.Namespace (include "switchyard.fullname" $root) | default (dict)) "data" | default (dict) -}}
{{- if $set -}}
{{- $set | b64enc -}}
{{- else if hasKey $previous $key -}}
{{- get $previous $key -}}
{{- else -}}
{{- if not (hasKey $root.Values "switchyardGenerated") -}}{{- $_ := set $root.Values "switchyardGenerated" (dict) -}}{{- end -}}
{{- $generated := $root.Values.switchyardGenerated -}}
{{- if not (hasKey $generated $key) -}}{{- $_ := set $generated $key (randAlphaNum (index . 3) | b64enc) -}}{{- end -}}
{{- get $generated $key -}}
{{- end -}}
{{- end -}}

{{/* The chart Secret's data (base64 values). */}}
{{- define "switchyard.secretData" -}}
admin-username: {{ .Values.admin.username | b64enc | quote }}
admin-password: {{ include "switchyard.secretValue" (list . "admin-password" .Values.admin.password 24) | quote }}
{{- if include "switchyard.metricsAuth" . }}
metrics-token: {{ include "switchyard.secretValue" (list . "metrics-token" .Values.metricsAuth.bearerToken 32) | quote }}
{{- end }}
{{- end -}}

{{/* What the pods' checksum/secret covers: the chart Secret's data, or the existing Secret's (lookup). */}}
{{- define "switchyard.secretChecksum" -}}
{{- if .Values.admin.existingSecret -}}
{{- get (lookup "v1" "Secret" .Release.Namespace .Values.admin.existingSecret | default (dict)) "data" | toYaml | sha256sum -}}
{{- else -}}
{{- include "switchyard.secretData" . | sha256sum -}}
{{- end -}}
{{- end -}}
