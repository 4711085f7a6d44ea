{{/*
fullname: the release name, or "<release>-steward" when the release name
does not contain "steward"; every object the chart creates starts with it.
Kept to 40 characters so that suffixed names stay within 63.
*/}}
{{- define "steward.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "steward.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller-manager
{{- end -}}

{{- define "steward.labels" -}}
{{ include "steward.selectorLabels" . }}
app.kubernetes.io/part-of: steward
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "steward.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (printf "%s-controller-manager" (include "steward.fullname" .)) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "steward.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The webhook certificate's Secret, Service and cert-manager Certificate. */}}
{{- define "steward.webhookSecret" -}}{{ include "steward.fullname" . }}-webhook-cert{{- end -}}
{{- define "steward.webhookService" -}}{{ include "steward.fullname" . }}-webhook{{- end -}}

{{/*
systemEnabled: "true" when the system serving API group .group (its first
DNS label: zookeeper.steward.dev is zookeeper) is among .Values.systems:
named, or "all" and not a preview system (one whose implementation is not
complete; hack/chartgen writes the list from internal/systems), as the
operator's --systems reads it.
Called with (dict "group" ... "root" $).
*/}}
{{- define "steward.systemEnabled" -}}
{{- $systems := .root.Values.systems | replace " " "" | splitList "," -}}
{{- $system := index (splitList "." .group) 0 -}}
{{- $preview := list -}}
{{- if or (and (has "all" $systems) (not (has $system $preview))) (has $system $systems) -}}true{{- end -}}
{{- end -}}

{{/* rotateCerts: "true" when the operator provisions its own webhook certificate. */}}
{{- define "steward.rotateCerts" -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.certManager.enabled) -}}true{{- end -}}
{{- end -}}
