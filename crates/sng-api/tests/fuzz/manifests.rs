//! Valid manifests, one per kind and shape: the seeds that the properties damage and mutate.

use serde_json::{json, Value};

pub(crate) fn valid_manifests() -> Vec<Value> {
    let digest = format!("sha256:{}", "9f1c".repeat(16));
    vec![
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "pet"},
            "spec": {"module": {"source": "oci://ovh-gra-0.registry.dev.stackngo.fr/acme/random-pet", "tag": "1.0.0"}}
        }),
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "app", "labels": {"team": "infra"}},
            "spec": {
                "module": {
                    "source": "oci://ovh-gra-0.registry.dev.stackngo.fr/acme/ovh-instance",
                    "digest": digest,
                    "pullSecretRef": {"name": "registry-creds"}
                },
                "providers": [{"name": "ovh-gra"}],
                "dependsOn": [{"name": "network"}],
                "vars": {"size": "s1-2", "count": 2, "tags": ["a", "b"], "nested": {"x": null}},
                "varsFrom": [
                    {"workspaceOutputRef": {"name": "network", "output": "subnet_id"}, "default": "subnet-mock"},
                    {"secretRef": {"name": "app-secrets", "key": "ssh-key"}, "varName": "ssh_public_key"}
                ],
                "imports": [
                    {"to": "ovh_cloud_project_instance.this", "id": "i-123"},
                    {"to": "aws_s3_bucket.assets[\"logs\"]", "idFrom": {"secretRef": {"name": "ids", "key": "bucket"}}},
                    {"to": "module.x.aws_instance.y[0]", "idFrom": {"workspaceOutputRef": {"name": "network", "output": "vm"}}}
                ],
                "backend": {"s3": {
                    "endpoint": "https://s3.gra.io.cloud.ovh.net",
                    "region": "gra",
                    "bucket": "tf-state",
                    "key": "team/app.tfstate",
                    "credentialsSecretRef": {"name": "s3-creds"},
                    "lockfile": false
                }},
                "outputs": {"secretName": "app-outputs"},
                "refresh": {"interval": "30m", "mode": "plan"},
                "approval": "manual",
                "deletionPolicy": "Orphan",
                "suspend": false,
                "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
            },
            "status": {
                "observedGeneration": 2,
                "conditions": [{"type": "Ready", "status": "True", "reason": "Applied", "message": "ok"}],
                "lastPlan": {"id": "p-1", "at": "2024-01-01T00:00:00Z", "add": 1, "hash": "h"},
                "lastApply": {"at": "2024-01-01T00:00:00Z", "result": "Succeeded"},
                "dependencies": [{"name": "network", "ready": true}],
                "lock": {"id": "l", "who": "someone"}
            }
        }),
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Provider",
            "metadata": {"name": "ovh-gra"},
            "spec": {
                "source": "registry.opentofu.org/ovh/ovh",
                "version": "~> 1.0",
                "alias": "gra",
                "config": {"endpoint": "ovh-eu", "retries": 3},
                "configFrom": [{"attribute": "application_secret", "secretRef": {"name": "ovh-creds", "key": "secret"}}],
                "env": [
                    {"name": "OVH_REGION", "value": "GRA"},
                    {"name": "OVH_CONSUMER_KEY", "secretRef": {"name": "ovh-creds", "key": "consumer"}}
                ]
            }
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "app.secrets"},
            "type": "Opaque",
            "data": {"token": "aGVsbG8="},
            "stringData": {"ssh-key": "ssh-ed25519 AAAA"}
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "registry-creds"},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": "{\"auths\":{\"r.example\":{\"auth\":\"dTpw\"}}}"}
        }),
        json!({
            "apiVersion": "tofu.stackngo.io/v1alpha1",
            "kind": "Tenant",
            "metadata": {"name": "acme"},
            "spec": {"production": true, "displayName": "Acme"}
        }),
    ]
}
