//! `storage.k8s.io/v1` (upstream `pkg/apis/storage/v1/defaults.go`). Inline volume specs of
//! VolumeAttachments get the `core/v1` volume source defaults through the walker.

use kapi_api::api::storage::v1 as storage;

use super::Registry;

pub fn register(r: &mut Registry) {
    r.add(set_defaults_storage_class);
    r.add(set_defaults_csi_driver);
}

/// Provisioned volumes are deleted with their claim and bound as soon as they are created.
pub fn set_defaults_storage_class(sc: &mut storage::StorageClass) {
    sc.reclaim_policy.get_or_insert_with(|| "Delete".into());
    sc.volume_binding_mode.get_or_insert_with(|| "Immediate".into());
}

/// A driver needs attaching, gets no pod info, publishes no capacity, changes ownership of
/// ReadWriteOnce volumes with a filesystem type, serves persistent volumes only, is not
/// republished, and takes no SELinux mount options (`SELinuxMountReadWriteOncePod`, on).
pub fn set_defaults_csi_driver(d: &mut storage::CSIDriver) {
    let spec = &mut d.spec;
    spec.attach_required.get_or_insert(true);
    spec.pod_info_on_mount.get_or_insert(false);
    spec.storage_capacity.get_or_insert(false);
    spec.fs_group_policy.get_or_insert_with(|| "ReadWriteOnceWithFSType".into());
    if spec.volume_lifecycle_modes.is_empty() {
        spec.volume_lifecycle_modes.push("Persistent".into());
    }
    spec.requires_republish.get_or_insert(false);
    spec.se_linux_mount.get_or_insert(false);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn storage_classes_and_csi_drivers() {
        assert_defaults::<storage::StorageClass>(
            json!({"provisioner": "p"}),
            json!({"provisioner": "p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
        );
        assert_defaults::<storage::CSIDriver>(
            json!({"spec": {}}),
            json!({"spec": {"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                "requiresRepublish": false, "seLinuxMount": false}}),
        );
    }
}
