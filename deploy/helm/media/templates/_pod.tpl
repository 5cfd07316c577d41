{{/*
The pod template of a role, the same for the three but for what the role is given:
  root     the chart's context
  role     gateway, actor-host or encoder-node (the CLI's command)
  values   the role's block of values (.Values.gateway, ...)
  probe    the port name the probes use: http on gateways, metrics elsewhere
  grace    terminationGracePeriodSeconds
  env      the role's own variables (a YAML list, already rendered)
  ports    extra container ports (a YAML list), besides metrics
  lifecycle the container's lifecycle hooks (YAML), or ""
  data     the volume source of the data folder (a YAML map)
*/}}
{{- define "media.pod" -}}
{{- $root := .root }}
{{- $v := $root.Values -}}
metadata:
  labels:
    {{- include "media.roleLabels" (dict "root" $root "role" .role) | nindent 4 }}
    {{- include "media.metricsLabel" . | nindent 4 }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # A changed setting or credential rolls the pods.
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- if not $v.secret.existingSecret }}
    checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
    {{- end }}
    {{- with (merge (dict) .values.podAnnotations $v.podAnnotations) }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "media.serviceAccountName" $root }}
  automountServiceAccountToken: {{ $v.serviceAccount.automountToken }}
  terminationGracePeriodSeconds: {{ .grace }}
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $v.podSecurityContext | nindent 4 }}
  {{- if $v.warmTmp }}
  {{- include "media.warmTmp" $root | nindent 2 }}
  {{- end }}
  containers:
    - name: {{ .role }}
      image: "{{ $v.image.repository }}:{{ include "media.imageTag" $root }}"
      imagePullPolicy: {{ $v.image.pullPolicy }}
      {{- with $v.image.command }}
      command:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      args: [{{ .role | quote }}]
      securityContext:
        {{- toYaml $v.securityContext | nindent 8 }}
      ports:
        {{- with .ports }}
        {{- . | nindent 8 }}
        {{- end }}
        - name: metrics
          containerPort: {{ $v.metrics.port }}
          protocol: TCP
      {{- include "media.containerEnv" (dict "root" $root "env" .env "extraEnv" .values.extraEnv) | nindent 6 }}
      startupProbe:
        httpGet: { path: {{ $v.probes.liveness.path }}, port: {{ .probe }} }
        periodSeconds: {{ $v.probes.startup.periodSeconds }}
        timeoutSeconds: {{ $v.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ $v.probes.startup.failureThreshold }}
      livenessProbe:
        httpGet: { path: {{ $v.probes.liveness.path }}, port: {{ .probe }} }
        periodSeconds: {{ $v.probes.liveness.periodSeconds }}
        timeoutSeconds: {{ $v.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ $v.probes.liveness.failureThreshold }}
      readinessProbe:
        httpGet: { path: {{ $v.probes.readiness.path }}, port: {{ .probe }} }
        periodSeconds: {{ $v.probes.readiness.periodSeconds }}
        timeoutSeconds: {{ $v.probes.readiness.timeoutSeconds }}
        failureThreshold: {{ $v.probes.readiness.failureThreshold }}
      {{- with .lifecycle }}
      lifecycle:
        {{- . | nindent 8 }}
      {{- end }}
      resources:
        {{- toYaml .values.resources | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: {{ include "media.dataDir" $root }}
        - name: tmp
          mountPath: /tmp
        {{- with $v.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: data
      {{- .data | nindent 6 }}
    - name: tmp
      emptyDir:
        sizeLimit: {{ $v.tmpSizeLimit }}
    {{- with $v.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* The data folder (MEDIA_DATA_DIR, the image's volume and its user's home): bootstrap.json on gateways, the encoder's work folder. */}}
{{- define "media.dataDir" -}}
/data
{{- end }}

{{/*
The container's envFrom and env, the same for every role and the migrate Job: the ConfigMap's
settings, the credentials from the Secret, the caller's own variables, then extraEnv (every
container's, then the caller's), which may override them. Parameters:
  root      the chart's context
  env       the caller's own variables (a YAML list, already rendered), or ""
  extraEnv  the caller's block's extraEnv (a list), or nil
*/}}
{{- define "media.containerEnv" -}}
{{- $v := .root.Values -}}
envFrom:
  - configMapRef:
      name: {{ include "media.fullname" .root }}
  {{- with $v.extraEnvFrom }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
env:
  - name: MEDIA_SERVER_SECRET
    valueFrom:
      secretKeyRef:
        name: {{ include "media.secretName" .root }}
        key: {{ $v.secret.keys.serverSecret }}
  {{- if $v.cassandra.username }}
  - name: MEDIA_CASSANDRA_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ include "media.secretName" .root }}
        key: {{ $v.secret.keys.cassandraPassword }}
  {{- end }}
  {{- if include "media.s3Keys" .root }}
  - name: MEDIA_MANAGED_S3_ACCESS_KEY_ID
    valueFrom:
      secretKeyRef:
        name: {{ include "media.secretName" .root }}
        key: {{ $v.secret.keys.s3AccessKeyId }}
  - name: MEDIA_MANAGED_S3_SECRET_ACCESS_KEY
    valueFrom:
      secretKeyRef:
        name: {{ include "media.secretName" .root }}
        key: {{ $v.secret.keys.s3SecretAccessKey }}
  {{- end }}
  {{- if $v.oidc.issuer }}
  - name: MEDIA_OIDC_CLIENT_SECRET
    valueFrom:
      secretKeyRef:
        name: {{ include "media.secretName" .root }}
        key: {{ $v.secret.keys.oidcClientSecret }}
  {{- end }}
  {{- with .env }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with $v.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with .extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/*
The init container that copies the image's /tmp (tsx's compiled sources, made at build) into the
pod's /tmp volume, which would hide it: the process then starts without transpiling again.
*/}}
{{- define "media.warmTmp" -}}
{{- $v := .Values -}}
initContainers:
  - name: warm-tmp
    image: "{{ $v.image.repository }}:{{ include "media.imageTag" . }}"
    imagePullPolicy: {{ $v.image.pullPolicy }}
    # Only a head start: a copy that fails (another runAsUser cannot read the image's cache) holds nothing up.
    command: [sh, -c, "cp -R /tmp/. /pod-tmp/ || echo 'warm-tmp: not copied; the process transpiles its sources at start'"]
    securityContext:
      {{- toYaml $v.securityContext | nindent 6 }}
    resources:
      requests: { cpu: 50m, memory: 32Mi }
      limits: { memory: 64Mi }
    volumeMounts:
      - name: tmp
        mountPath: /pod-tmp
{{- end }}

{{/* On the pods that serve metrics (every role's, not the migrate Job's): the metrics Service selects them. */}}
{{- define "media.metricsLabel" -}}
media/serves-metrics: "true"
{{- end }}
