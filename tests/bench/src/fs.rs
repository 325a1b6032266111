//! Which file system the benchmark's data is on. On tmpfs a sync costs
//! nothing, so the `fdatasync` floor and every durable write would be
//! measured without a disk; some systems mount the temporary directory,
//! the bench's default, there.

use std::path::Path;

/// The file system type of the mount that holds `path` ("ext4", "tmpfs"),
/// from `/proc/self/mountinfo`; `None` if it cannot be told.
pub fn type_of(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    type_in_mountinfo(&mountinfo, &path.to_string_lossy())
}

/// Whether a file system of this type keeps its data in memory only.
pub fn is_memory(fs_type: &str) -> bool {
    matches!(fs_type, "tmpfs" | "ramfs" | "devtmpfs")
}

/// The type of the mount in `mountinfo` (the kernel's format, see proc(5))
/// whose mount point is the longest one holding `path` (absolute, no `..`).
/// Of mounts on the same point, the last one listed is the one seen.
fn type_in_mountinfo(mountinfo: &str, path: &str) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let mut halves = line.splitn(2, " - ");
        let (Some(head), Some(tail)) = (halves.next(), halves.next()) else {
            continue;
        };
        let (Some(point), Some(fs)) = (head.split(' ').nth(4), tail.split(' ').next()) else {
            continue;
        };
        let point = unescape(point);
        let holds = point == "/"
            || path == point
            || (path.starts_with(&point) && path.as_bytes().get(point.len()) == Some(&b'/'));
        if holds && best.as_ref().is_none_or(|(len, _)| point.len() >= *len) {
            best = Some((point.len(), fs.to_string()));
        }
    }
    best.map(|(_, fs)| fs)
}

/// mountinfo writes a space, tab, newline and backslash in a path as
/// `\040`, `\011`, `\012` and `\134`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Three octal digits, the first at most 3: one byte.
        if b[i] == b'\\'
            && i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && b[i + 2..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:2 - proc proc rw
24 22 0:5 / /dev rw,nosuid shared:3 - devtmpfs devtmpfs rw,size=4096k
25 24 0:22 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw
26 22 0:23 / /tmp rw,nosuid,nodev shared:5 - tmpfs tmpfs rw
27 22 254:16 / /srv/my\\040disk rw,relatime shared:6 - xfs /dev/vdb rw
28 22 254:32 / /tmp rw,relatime shared:7 - ext4 /dev/vdc rw
";

    #[test]
    fn the_longest_mount_point_holding_the_path_decides() {
        let t = |p: &str| type_in_mountinfo(MOUNTINFO, p);
        assert_eq!(t("/"), Some("ext4".into()));
        assert_eq!(t("/home/me/bench"), Some("ext4".into()));
        assert_eq!(t("/dev/shm"), Some("tmpfs".into()));
        assert_eq!(t("/dev/shm/hs/n1"), Some("tmpfs".into()));
        assert_eq!(
            t("/dev/shmx"),
            Some("devtmpfs".into()),
            "a prefix of a name is not a parent"
        );
        assert_eq!(t("/srv/my disk/data"), Some("xfs".into()), "escaped space");
        assert_eq!(
            unescape(r"a\134b\040\777\12"),
            r"a\b \777\12",
            "only whole escapes of one byte"
        );
        // Mounted over: the later mount on /tmp is the one seen.
        assert_eq!(t("/tmp/x"), Some("ext4".into()));
        assert_eq!(type_in_mountinfo("garbage\n", "/x"), None);
    }

    #[test]
    fn memory_file_systems() {
        assert!(is_memory("tmpfs") && is_memory("ramfs") && is_memory("devtmpfs"));
        assert!(!is_memory("ext4") && !is_memory("xfs") && !is_memory("btrfs"));
    }

    #[test]
    fn this_machine_has_a_root_file_system() {
        let fs = type_of(Path::new("/")).expect("the root's file system");
        assert!(!fs.is_empty());
    }
}
