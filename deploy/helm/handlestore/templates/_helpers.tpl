{{/*
Names. The StatefulSet is <fullname>, its pods <fullname>-N, the headless
peer Service <fullname>-peers: member N (node id N+1) is
<fullname>-N.<fullname>-peers.<namespace>.svc.<clusterDomain>. 40
characters leave room for "-peers", the ordinal and the StatefulSet's
controller-revision-hash label (63 at most).
*/}}
{{- define "hs.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hs.peers" -}}{{ include "hs.fullname" . }}-peers{{- end -}}

{{/* The DNS suffix of every member: .<fullname>-peers.<ns>.svc.<domain> */}}
{{- define "hs.peerDomain" -}}
{{- printf "%s.%s.svc.%s" (include "hs.peers" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* Member ORDINAL's DNS name; call with (list $ ORDINAL). */}}
{{- define "hs.memberHost" -}}
{{- $ := index . 0 -}}
{{- printf "%s-%d.%s" (include "hs.fullname" $) (int (index . 1)) (include "hs.peerDomain" $) -}}
{{- end -}}

{{/* The client Service's name inside the cluster. */}}
{{- define "hs.clientHost" -}}
{{- printf "%s.%s.svc" (include "hs.fullname" .) .Release.Namespace -}}
{{- end -}}

{{- define "hs.scheme" -}}{{ ternary "https" "http" .Values.tls.enabled }}{{- end -}}

{{/* The client endpoint the chart's jobs and joining members use. */}}
{{- define "hs.clientEndpoint" -}}
{{- printf "%s://%s:%d" (include "hs.scheme" .) (include "hs.clientHost" .) (int .Values.ports.client) -}}
{{- end -}}

{{/*
--initial-cluster: the founding members by name,
1=<name0>:7401/<name0>:7410,2=...
*/}}
{{- define "hs.initialCluster" -}}
{{- $entries := list -}}
{{- range $i := until (int .Values.initialMembers) -}}
{{- $host := include "hs.memberHost" (list $ $i) -}}
{{- $entries = append $entries (printf "%d=%s:%d/%s:%d" (add $i 1) $host (int $.Values.ports.client) $host (int $.Values.ports.peer)) -}}
{{- end -}}
{{- join "," $entries -}}
{{- end -}}

{{- define "hs.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Every pod of this release: members and the chart's jobs. */}}
{{- define "hs.releaseSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The members only. */}}
{{- define "hs.memberSelector" -}}
{{ include "hs.releaseSelector" . }}
app.kubernetes.io/component: member
{{- end -}}

{{- define "hs.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Secrets. */}}
{{- define "hs.tlsSecret" -}}
{{- if eq .Values.tls.mode "secret" -}}
{{- required "tls.mode=secret needs tls.secretName" .Values.tls.secretName -}}
{{- else -}}
{{- include "hs.fullname" . }}-tls
{{- end -}}
{{- end -}}

{{- define "hs.caSecret" -}}{{ include "hs.fullname" . }}-ca{{- end -}}

{{/* cert-manager: member ORDINAL's Secret; call with (list $ ORDINAL). */}}
{{- define "hs.memberTlsSecret" -}}
{{- printf "%s-%d-tls" (include "hs.fullname" (index . 0)) (int (index . 1)) -}}
{{- end -}}

{{- define "hs.tokenSecret" -}}
{{- .Values.auth.existingSecret | default (printf "%s-root-token" (include "hs.fullname" .)) -}}
{{- end -}}

{{/*
The DNS names in member ORDINAL's certificate: node-ID (what peers check,
docs/security.md), its own name, the client Service's names, localhost.
Call with (list $ ORDINAL).
*/}}
{{- define "hs.memberDnsNames" -}}
{{- $ := index . 0 -}}
{{- $i := int (index . 1) -}}
{{- $svc := include "hs.fullname" $ -}}
{{- $names := list (printf "node-%d" (add $i 1)) (include "hs.memberHost" (list $ $i)) $svc (printf "%s.%s" $svc $.Release.Namespace) (include "hs.clientHost" $) (printf "%s.%s" (include "hs.clientHost" $) $.Values.clusterDomain) "localhost" -}}
{{- concat $names $.Values.tls.extraDnsNames | toJson -}}
{{- end -}}

{{/*
Environment the handlestore CLI reads, for the chart's jobs and for
`kubectl exec ... handlestore ...` in a member.
*/}}
{{- define "hs.cliEnv" -}}
- name: HANDLESTORE_ENDPOINTS
  value: {{ include "hs.clientEndpoint" . | quote }}
- name: HANDLESTORE_LOG_FORMAT
  value: {{ .Values.node.logFormat | quote }}
{{- if .Values.tls.enabled }}
- name: HANDLESTORE_CACERT
  value: /tls/ca.pem
{{- end }}
{{- if .Values.auth.enabled }}
- name: HANDLESTORE_TOKEN_FILE
  value: /auth/token
{{- end }}
{{- end -}}

{{/* The volumes the chart's jobs mount: the CA and root's token. */}}
{{- define "hs.jobVolumes" -}}
- name: tmp
  emptyDir: {}
{{- if .Values.tls.enabled }}
- name: tls
{{- if eq .Values.tls.mode "cert-manager" }}
  secret:
    secretName: {{ include "hs.memberTlsSecret" (list . 0) }}
    items:
      - {key: ca.crt, path: ca.pem}
{{- else }}
  secret:
    secretName: {{ include "hs.tlsSecret" . }}
    items:
      - {key: ca.pem, path: ca.pem}
{{- end }}
{{- end }}
{{- if .Values.auth.enabled }}
- name: auth
  secret:
    secretName: {{ include "hs.tokenSecret" . }}
    # Missing only in an upgrade that turns auth on (nothing to send yet).
    optional: true
    items:
      - key: {{ .Values.auth.existingSecretKey }}
        path: token
{{- end }}
{{- end -}}

{{- define "hs.jobMounts" -}}
- {name: tmp, mountPath: /tmp}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /tls, readOnly: true}
{{- end }}
{{- if .Values.auth.enabled }}
- {name: auth, mountPath: /auth, readOnly: true}
{{- end }}
{{- end -}}

{{/* A pod spec's common part for the chart's jobs. */}}
{{- define "hs.jobPodCommon" -}}
restartPolicy: Never
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A job container's common part (after its name and args). */}}
{{- define "hs.jobContainerCommon" -}}
image: {{ include "hs.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.containerSecurityContext | nindent 2 }}
{{- with .Values.jobs.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Checks that hold for every template. */}}
{{- define "hs.validate" -}}
{{- if lt (int .Values.initialMembers) 1 -}}{{ fail "initialMembers must be at least 1" }}{{- end -}}
{{- if lt (int .Values.replicas) 1 -}}{{ fail "replicas must be at least 1" }}{{- end -}}
{{- if gt (int .Values.replicas) (int .Values.maxReplicas) -}}{{ fail (printf "replicas (%d) is above maxReplicas (%d): raise maxReplicas first" (int .Values.replicas) (int .Values.maxReplicas)) }}{{- end -}}
{{- if not (has .Values.tls.mode (list "self-signed" "secret" "cert-manager")) -}}{{ fail "tls.mode is self-signed, secret or cert-manager" }}{{- end -}}
{{- if not (has .Values.podAntiAffinity (list "soft" "hard" "none")) -}}{{ fail "podAntiAffinity is soft, hard or none" }}{{- end -}}
{{- if not (has .Values.metrics.monitor (list "ServiceMonitor" "PodMonitor" "none")) -}}{{ fail "metrics.monitor is ServiceMonitor, PodMonitor or none" }}{{- end -}}
{{- if and .Values.restore.claimName (not .Values.restore.file) -}}{{ fail "restore.claimName needs restore.file" }}{{- end -}}
{{- end -}}
