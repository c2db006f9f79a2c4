package kubernetes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/targets"
)

// ServerName is the name on the apiservers' certificate, which clients
// check in place of the address they dial (the servers' addresses are not
// known before they start).
const ServerName = "fencecheck-apiserver"

// user is the bearer token's user.
const user = "fencecheck"

// Secure makes a run's material, in Go (no openssl in any image): a
// certificate authority and the apiservers' certificate for ServerName
// signed by it, a bearer token, and the service-account key pair
// kube-apiserver requires. The target it returns writes them into every
// apiserver's container before it starts (Nodes).
func (t Target) Secure() (targets.Target, targets.Credentials, error) {
	var creds targets.Credentials
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, creds, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fencecheck run CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, creds, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, creds, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, creds, err
	}
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ServerName},
		DNSNames: []string{ServerName}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, creds, err
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, creds, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, creds, err
	}
	saDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, creds, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, creds, err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, creds, err
	}
	creds = targets.Credentials{
		CA:         string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		ServerName: ServerName,
		Token:      hex.EncodeToString(tok),
	}
	t.creds = &creds
	t.files = []targets.File{
		{Path: configDir + "/tls.crt", Data: append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}), creds.CA...)},
		{Path: configDir + "/tls.key", Data: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: srvKeyDER}), Mode: 0o600},
		{Path: configDir + "/sa.key", Data: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saDER}), Mode: 0o600},
		{Path: configDir + "/sa.pub", Data: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub})},
		{Path: configDir + "/tokens.csv", Data: fmt.Appendf(nil, "%s,%s,%s,\"system:masters\"\n", creds.Token, user, user), Mode: 0o600},
	}
	return t, creds, nil
}

// configDir holds an apiserver's certificate, keys and token file.
const configDir = "/etc/fencecheck/kubernetes"

// apiServerCmd is an apiserver's command line, its store the etcd servers
// at etcdURLs: HTTPS on APIPort with the run's certificate, bearer tokens
// only (no anonymous request: one without the token gets 401), every
// authenticated request allowed, service-account tokens signed with the
// run's key pair (kube-apiserver requires one, though no client here uses
// such a token), and Service addresses from a virtual range nothing routes;
// with coordinated, coordinatedFlags besides.
func apiServerCmd(etcdURLs []string, coordinated bool) []string {
	cmd := []string{"/usr/local/bin/kube-apiserver",
		"--etcd-servers=" + strings.Join(etcdURLs, ","),
		fmt.Sprintf("--secure-port=%d", APIPort), "--bind-address=0.0.0.0",
		"--tls-cert-file=" + configDir + "/tls.crt", "--tls-private-key-file=" + configDir + "/tls.key",
		"--anonymous-auth=false", "--token-auth-file=" + configDir + "/tokens.csv",
		"--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + configDir + "/sa.pub", "--service-account-signing-key-file=" + configDir + "/sa.key",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--profiling=false",
	}
	if coordinated {
		cmd = append(cmd, coordinatedFlags...)
	}
	return cmd
}

// coordinatedFlags turn Coordinated Leader Election on: its feature gate
// (beta and off by default in 1.37), which starts the apiserver's
// leader-election controller (it elects, among the LeaseCandidates of a
// Lease, the holder of that Lease, and hands the Lease on once it expired
// by the apiserver's clock), and the API version its LeaseCandidates are
// served in, coordination.k8s.io/v1beta1, which no beta API is by default.
var coordinatedFlags = []string{"--feature-gates=CoordinatedLeaderElection=true", "--runtime-config=coordination.k8s.io/v1beta1=true"}
