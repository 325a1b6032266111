package charttest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kinds of cert-manager (cert-manager.io/v1) and of the Prometheus
// Operator (monitoring.coreos.com/v1) the chart renders, with the fields
// of their v1 APIs that the chart uses, named as those APIs name them:
// decoded strictly, a field the chart misspells or that the API does not
// have fails, as with the k8s.io/api types. (Their own Go modules would
// bring dependency trees far larger than these tests.)

// Issuer is cert-manager.io/v1 Issuer.
type Issuer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              IssuerSpec `json:"spec"`
}

type IssuerSpec struct {
	SelfSigned *struct {
		CRLDistributionPoints []string `json:"crlDistributionPoints,omitempty"`
	} `json:"selfSigned,omitempty"`
	CA *struct {
		SecretName string `json:"secretName"`
	} `json:"ca,omitempty"`
}

// Certificate is cert-manager.io/v1 Certificate.
type Certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              CertificateSpec `json:"spec"`
}

type CertificateSpec struct {
	SecretName  string   `json:"secretName"`
	CommonName  string   `json:"commonName,omitempty"`
	DNSNames    []string `json:"dnsNames,omitempty"`
	IPAddresses []string `json:"ipAddresses,omitempty"`
	Usages      []string `json:"usages,omitempty"`
	IsCA        bool     `json:"isCA,omitempty"`
	Duration    string   `json:"duration,omitempty"`
	RenewBefore string   `json:"renewBefore,omitempty"`
	PrivateKey  *struct {
		Algorithm      string `json:"algorithm,omitempty"`
		Size           int    `json:"size,omitempty"`
		Encoding       string `json:"encoding,omitempty"`
		RotationPolicy string `json:"rotationPolicy,omitempty"`
	} `json:"privateKey,omitempty"`
	IssuerRef ObjectReference `json:"issuerRef"`
}

// ObjectReference is cert-manager's issuer reference (cmmeta.ObjectReference).
type ObjectReference struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

// ServiceMonitor is monitoring.coreos.com/v1 ServiceMonitor.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []MetricsEndpoint    `json:"endpoints"`
	} `json:"spec"`
}

// PodMonitor is monitoring.coreos.com/v1 PodMonitor.
type PodMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []MetricsEndpoint    `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// MetricsEndpoint is the part of Endpoint and PodMetricsEndpoint the
// chart sets.
type MetricsEndpoint struct {
	Port     string `json:"port,omitempty"`
	Path     string `json:"path,omitempty"`
	Scheme   string `json:"scheme,omitempty"`
	Interval string `json:"interval,omitempty"`
}

// PrometheusRule is monitoring.coreos.com/v1 PrometheusRule.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              RuleFile `json:"spec"`
}

// RuleFile is a Prometheus rule file, as deploy/prometheus/alerts.yml is.
type RuleFile struct {
	Groups []RuleGroup `json:"groups"`
}

type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}
