{{/* Names and labels shared by every object (Kubernetes' recommended app.kubernetes.io labels). */}}

{{- define "media.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "media.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* A role's object name: <fullname>-<role>, within a DNS label's 63 characters. */}}
{{- define "media.roleName" -}}
{{- printf "%s-%s" (include "media.fullname" .root | trunc (int (sub 62 (len .role))) | trimSuffix "-") .role }}
{{- end }}

{{/* The migrate Job's name: <fullname>-migrate-<revision>, within a DNS label's 63 characters. */}}
{{- define "media.migrateJobName" -}}
{{- $suffix := printf "migrate-%d" .Release.Revision -}}
{{- printf "%s-%s" (include "media.fullname" . | trunc (int (sub 62 (len $suffix))) | trimSuffix "-") $suffix }}
{{- end }}

{{- define "media.selectorLabels" -}}
app.kubernetes.io/name: {{ include "media.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "media.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "media.selectorLabels" . }}
app.kubernetes.io/version: {{ include "media.imageTag" . | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: media
{{- end }}

{{/* Labels of a role's objects and pods: {root, role}. */}}
{{- define "media.roleLabels" -}}
{{ include "media.labels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "media.roleSelectorLabels" -}}
{{ include "media.selectorLabels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "media.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "media.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "media.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "media.secretName" -}}
{{- default (include "media.fullname" .) .Values.secret.existingSecret }}
{{- end }}

{{/* Whether the Secret holds S3 keys: a bucket is set. */}}
{{- define "media.s3Keys" -}}
{{- if .Values.storage.s3.bucket }}true{{ end }}
{{- end }}
