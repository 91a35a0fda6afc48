{{/* Names and labels. */}}
{{- define "reelgen.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "reelgen.fullname" -}}
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

{{- define "reelgen.selectorLabels" -}}
app.kubernetes.io/name: {{ include "reelgen.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "reelgen.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "reelgen.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: (dict "ctx" $ "component" "worker") */}}
{{- define "reelgen.componentSelector" -}}
{{ include "reelgen.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "reelgen.componentLabels" -}}
{{ include "reelgen.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "reelgen.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "reelgen.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository@digest when a digest is given (the tag is then only a label for people). */}}
{{- define "reelgen.imageRef" -}}
{{- if .digest }}
{{- printf "%s@%s" .repository .digest }}
{{- else }}
{{- printf "%s:%s" .repository (default .appVersion .tag) }}
{{- end }}
{{- end }}

{{- define "reelgen.image" -}}
{{ include "reelgen.imageRef" (merge (dict "appVersion" .Chart.AppVersion) .Values.image) }}
{{- end }}

{{/* The daemon on the CPU runs from the CPU image (CPU torch, the same models): only a CUDA device needs the
     multi-GB CUDA image. */}}
{{- define "reelgen.daemonUsesCpuImage" -}}
{{- if eq .Values.gpuDaemon.device "cpu" }}true{{ end }}
{{- end }}

{{- define "reelgen.daemonImage" -}}
{{- if include "reelgen.daemonUsesCpuImage" . }}
{{- include "reelgen.image" . }}
{{- else }}
{{- include "reelgen.imageRef" (merge (dict "appVersion" .Chart.AppVersion) .Values.gpuImage) }}
{{- end }}
{{- end }}

{{- define "reelgen.daemonPullPolicy" -}}
{{- if include "reelgen.daemonUsesCpuImage" . }}{{ .Values.image.pullPolicy }}{{ else }}{{ .Values.gpuImage.pullPolicy }}{{ end }}
{{- end }}

{{/* The Secret holding credentials the chart was given inline. */}}
{{- define "reelgen.secretName" -}}
{{ include "reelgen.fullname" . }}-credentials
{{- end }}

{{- define "reelgen.redisSecretName" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecret }}{{ else }}{{ include "reelgen.secretName" . }}{{ end }}
{{- end }}

{{- define "reelgen.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretPasswordKey }}{{ else }}redis-password{{ end }}
{{- end }}

{{- define "reelgen.redisHasPassword" -}}
{{- if or .Values.redis.password .Values.redis.existingSecret }}true
{{- else if not .Values.redis.allowUnauthenticated }}
{{- fail "redis: give redis.password or redis.existingSecret (the broker holds every job and can run tasks on the workers), or set redis.allowUnauthenticated=true for a Redis only this release can reach" }}
{{- end }}
{{- end }}

{{- define "reelgen.s3SecretName" -}}
{{- if .Values.s3.existingSecret }}{{ .Values.s3.existingSecret }}{{ else if .Values.s3.accessKeyId }}{{ include "reelgen.secretName" . }}{{ end }}
{{- end }}

{{/* Sizing, computed once so every template agrees. */}}
{{- define "reelgen.workerProcesses" -}}
{{- $procs := div (int .Values.worker.cpusPerGpu) (int .Values.worker.codecThreads) -}}
{{- if lt $procs 1 }}{{ fail "worker.codecThreads must not exceed worker.cpusPerGpu" }}{{ end -}}
{{ $procs }}
{{- end }}

{{- define "reelgen.workerMemoryMiB" -}}
{{ add (mul (include "reelgen.workerProcesses" . | int) (int .Values.worker.memoryPerProcessMiB)) (int .Values.worker.memoryBaseMiB) }}
{{- end }}

{{- define "reelgen.poolMiB" -}}
{{ mul (int .Values.gpuDaemon.slots) (int .Values.gpuDaemon.slotMiB) }}
{{- end }}

{{/* /dev/shm holds the daemon's slot pool plus headroom (tmpfs pages count against the pod's memory). */}}
{{- define "reelgen.shmMiB" -}}
{{ add (include "reelgen.poolMiB" . | int) (int .Values.gpuDaemon.shmHeadroomMiB) }}
{{- end }}

{{- define "reelgen.daemonSocket" -}}
{{ .Values.gpuDaemon.socketDir }}/daemon.sock
{{- end }}

{{/* Longest task + Celery's soft shutdown + margin: the kubelet must not kill a worker that is still draining. */}}
{{- define "reelgen.workerGraceSeconds" -}}
{{ add (int .Values.settings.taskTimeLimitSeconds) (int .Values.worker.softShutdownSeconds) (int .Values.worker.shutdownMarginSeconds) }}
{{- end }}

{{/* Environment every reelgen process gets: broker, storage, shared settings. */}}
{{- define "reelgen.env" -}}
{{- if include "reelgen.redisHasPassword" . }}
- name: REELGEN_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "reelgen.redisSecretName" . }}
      key: {{ include "reelgen.redisSecretKey" . }}
- name: REELGEN_REDIS_URL
  value: {{ printf "%s://:$(REELGEN_REDIS_PASSWORD)@%s:%d/%d" (ternary "rediss" "redis" .Values.redis.tls) .Values.redis.host (int .Values.redis.port) (int .Values.redis.db) | quote }}
{{- else }}
- name: REELGEN_REDIS_URL
  value: {{ printf "%s://%s:%d/%d" (ternary "rediss" "redis" .Values.redis.tls) .Values.redis.host (int .Values.redis.port) (int .Values.redis.db) | quote }}
{{- end }}
{{- with include "reelgen.s3SecretName" . }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: AWS_SECRET_ACCESS_KEY
{{- end }}
{{- /* reelgen's settings and boto3's own variables both, so the store finds the endpoint either way */}}
{{- with .Values.s3.endpoint }}
- name: REELGEN_S3_ENDPOINT_URL
  value: {{ . | quote }}
- name: AWS_ENDPOINT_URL_S3
  value: {{ . | quote }}
{{- end }}
{{- with .Values.s3.region }}
- name: REELGEN_S3_REGION
  value: {{ . | quote }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
- name: REELGEN_OUT
  value: {{ .Values.settings.out | quote }}
- name: REELGEN_ASPECTS
  value: {{ .Values.settings.aspects | quote }}
{{- with .Values.settings.placements }}
- name: REELGEN_PLACEMENTS
  value: {{ . | quote }}
{{- end }}
- name: REELGEN_MAX_IN_FLIGHT
  value: {{ .Values.settings.maxInFlight | quote }}
- name: REELGEN_TASK_TIME_LIMIT_S
  value: {{ .Values.settings.taskTimeLimitSeconds | quote }}
- name: REELGEN_TASK_RETRIES
  value: {{ .Values.settings.taskRetries | quote }}
- name: REELGEN_LEASE_S
  value: {{ .Values.settings.leaseSeconds | default (add (int .Values.settings.taskTimeLimitSeconds) 1800) | quote }}
- name: REELGEN_WORKER_HEARTBEAT_S
  value: {{ .Values.worker.heartbeat.intervalSeconds | quote }}
- name: REELGEN_WORKER_LOST_S
  value: {{ .Values.settings.workerLostSeconds | quote }}
- name: REELGEN_STATE_DIR
  value: /var/lib/reelgen
- name: REELGEN_METRICS_PORT
  value: {{ .Values.metrics.port | quote }}
- name: REELGEN_METRICS_HOST
  value: "0.0.0.0"
- name: REELGEN_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
- name: HOME
  value: /tmp
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Writable folders under a read-only root: state (embedded files, beat schedule) and /tmp. */}}
{{- define "reelgen.baseVolumes" -}}
- name: state
  emptyDir:
    sizeLimit: {{ .Values.volumes.stateSizeLimit }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.volumes.tmpSizeLimit }}
{{- end }}

{{- define "reelgen.baseMounts" -}}
- name: state
  mountPath: /var/lib/reelgen
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* Pod-level settings every component shares. */}}
{{- define "reelgen.podCommon" -}}
serviceAccountName: {{ include "reelgen.serviceAccountName" . }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "reelgen.flowerSecretName" -}}
{{- if .Values.flower.auth.existingSecret }}{{ .Values.flower.auth.existingSecret }}{{ else }}{{ include "reelgen.fullname" . }}-flower-auth{{ end }}
{{- end }}

{{- define "reelgen.flowerSecretKey" -}}
{{- if .Values.flower.auth.existingSecret }}{{ .Values.flower.auth.existingSecretKey }}{{ else }}basic-auth{{ end }}
{{- end }}

{{- define "reelgen.flowerPrefix" -}}
{{- with trimAll "/" .Values.flower.urlPrefix }}/{{ . }}{{ end }}
{{- end }}
