//! The unsynced writes of one file: whole pages over its backing file, and
//! the file's size as the application sees it. Nothing here writes the
//! backing file except [`Pages::persist`].

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// The cache's unit: a write to part of a page loads the rest of it from
/// the backing file first.
pub const PAGE: u64 = 4096;

/// Reads `len` bytes at `off` from `file`, fewer if the file ends first.
pub fn read_upto(file: &File, off: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(done);
    Ok(buf)
}

/// One file's unsynced data. The backing file is never longer than
/// `size` while it exists (truncation and allocation reach both at once).
#[derive(Debug)]
pub struct Pages {
    pages: BTreeMap<u64, Box<[u8]>>,
    size: u64,
}

impl Pages {
    /// No unsynced data yet, over a backing file `size` bytes long.
    pub fn new(size: u64) -> Self {
        Self {
            pages: BTreeMap::new(),
            size,
        }
    }

    /// The file's size as the application sees it.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// How many bytes are held (whole pages).
    pub fn held(&self) -> u64 {
        self.pages.len() as u64 * PAGE
    }

    /// Writes `data` at `off`, loading each partly written page that is
    /// not cached yet from `backing`.
    pub fn write(&mut self, backing: &File, off: u64, data: &[u8]) -> io::Result<()> {
        let end = off + data.len() as u64;
        let mut pos = off;
        while pos < end {
            let index = pos / PAGE;
            let in_page = (pos % PAGE) as usize;
            let n = (PAGE as usize - in_page).min((end - pos) as usize);
            let page = self.page_mut(backing, index)?;
            let from = (pos - off) as usize;
            page[in_page..in_page + n].copy_from_slice(&data[from..from + n]);
            pos += n as u64;
        }
        self.size = self.size.max(end);
        Ok(())
    }

    /// Page `index`, loaded from `backing` if it is not cached (what lies
    /// past the backing file's end reads as zeros).
    fn page_mut(&mut self, backing: &File, index: u64) -> io::Result<&mut Box<[u8]>> {
        if !self.pages.contains_key(&index) {
            let mut page = vec![0u8; PAGE as usize].into_boxed_slice();
            let start = index * PAGE;
            if start < self.size {
                let synced = read_upto(backing, start, PAGE.min(self.size - start))?;
                page[..synced.len()].copy_from_slice(&synced);
            }
            self.pages.insert(index, page);
        }
        Ok(self.pages.get_mut(&index).expect("just inserted"))
    }

    /// Reads up to `len` bytes at `off`: the cached pages over what
    /// `backing` holds, nothing past the end of the file.
    pub fn read(&self, backing: &File, off: u64, len: u64) -> io::Result<Vec<u8>> {
        if off >= self.size {
            return Ok(Vec::new());
        }
        let end = self.size.min(off + len);
        let mut buf = read_upto(backing, off, end - off)?;
        buf.resize((end - off) as usize, 0);
        let first = off / PAGE;
        let last = (end - 1) / PAGE;
        for (&index, page) in self.pages.range(first..=last) {
            let start = (index * PAGE).max(off);
            let stop = ((index + 1) * PAGE).min(end);
            let src = &page[(start - index * PAGE) as usize..(stop - index * PAGE) as usize];
            buf[(start - off) as usize..(stop - off) as usize].copy_from_slice(src);
        }
        Ok(buf)
    }

    /// The file is now `size` bytes long (the backing file was cut or
    /// extended to the same length): pages past it go, the rest of the
    /// page it ends in reads as zeros.
    pub fn truncate(&mut self, size: u64) {
        let keep = size.div_ceil(PAGE);
        self.pages.split_off(&keep);
        if !size.is_multiple_of(PAGE)
            && let Some(page) = self.pages.get_mut(&(size / PAGE))
        {
            page[(size % PAGE) as usize..].fill(0);
        }
        self.size = size;
    }

    /// Space was allocated up to `end` in the backing file, which grew to
    /// it if it was shorter.
    pub fn allocated(&mut self, end: u64) {
        self.size = self.size.max(end);
    }

    /// Writes every cached page to `backing` (not synced: the caller
    /// syncs), up to the file's size, and leaves the backing file exactly
    /// that long.
    pub fn persist(&self, backing: &File) -> io::Result<()> {
        for (&index, page) in &self.pages {
            let start = index * PAGE;
            let len = PAGE.min(self.size.saturating_sub(start)) as usize;
            backing.write_all_at(&page[..len], start)?;
        }
        if backing.metadata()?.len() != self.size {
            backing.set_len(self.size)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backing(content: &[u8]) -> File {
        let mut f = tempfile::tempfile().expect("temp file");
        std::io::Write::write_all(&mut f, content).expect("write");
        f
    }

    #[test]
    fn writes_stay_out_of_the_backing_file_until_persisted() {
        let f = backing(b"hello world");
        let mut p = Pages::new(11);
        p.write(&f, 6, b"there, friend").expect("write");
        assert_eq!(p.size(), 19);
        assert_eq!(p.read(&f, 0, 100).expect("read"), b"hello there, friend");
        assert_eq!(read_upto(&f, 0, 100).expect("read"), b"hello world");
        p.persist(&f).expect("persist");
        assert_eq!(read_upto(&f, 0, 100).expect("read"), b"hello there, friend");
    }

    #[test]
    fn writes_across_pages_and_past_holes_read_back() {
        let f = backing(&[7u8; 100]);
        let mut p = Pages::new(100);
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * PAGE as usize).collect();
        p.write(&f, PAGE * 2 + 10, &data).expect("write");
        let all = p.read(&f, 0, PAGE * 10).expect("read");
        assert_eq!(all.len() as u64, PAGE * 5 + 10);
        assert_eq!(&all[..100], &[7u8; 100][..]);
        assert!(all[100..(PAGE * 2 + 10) as usize].iter().all(|&b| b == 0));
        assert_eq!(&all[(PAGE * 2 + 10) as usize..], &data[..]);
        assert_eq!(p.read(&f, PAGE * 2 + 12, 3).expect("read"), &data[2..5]);
        p.persist(&f).expect("persist");
        assert_eq!(read_upto(&f, 0, PAGE * 10).expect("read"), all);
    }

    #[test]
    fn a_truncation_drops_and_zeroes_what_lies_past_it() {
        let f = backing(b"");
        let mut p = Pages::new(0);
        p.write(&f, 0, &[1u8; 2 * PAGE as usize]).expect("write");
        p.truncate(10);
        f.set_len(10).expect("set_len");
        assert_eq!(p.held(), PAGE);
        p.write(&f, 20, b"x").expect("write");
        let got = p.read(&f, 0, 100).expect("read");
        assert_eq!(&got[..10], &[1u8; 10]);
        assert_eq!(&got[10..20], &[0u8; 10]);
        assert_eq!(&got[20..], b"x");
        p.persist(&f).expect("persist");
        assert_eq!(read_upto(&f, 0, 100).expect("read"), got);
    }
}
