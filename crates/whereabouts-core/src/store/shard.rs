//! One memory-mapped shard. Opening checks the FlatBuffers structure (identifier,
//! root table, vtable, every vector's bounds and alignment) and the cross-references
//! between vectors, in time proportional to the number of networks, never of stations.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::layout::{self, VectorField, FENCE_STRIDE};
use super::record::{Area, Mast, Network, StationRecord};
use super::table::{records, RootTable};
use super::writer::Record;
use super::StoreError;

pub struct Shard {
    path: PathBuf,
    map: Mmap,
    created: u64,
    vectors: [Range<usize>; 8],
}

fn field_slot(field: VectorField) -> usize {
    VectorField::ALL
        .iter()
        .position(|f| *f == field)
        .unwrap_or(0)
}

impl Shard {
    pub fn open(path: &Path) -> Result<Shard, StoreError> {
        let corrupt = |why: &str| StoreError::Corrupt(format!("{}: {why}", path.display()));
        let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
        // SAFETY: shards are immutable once renamed into place; a writer never
        // modifies a published file (updates write new files and switch the manifest).
        let map = unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io(path, e))?;
        // Lookups touch a few lines here and there; the kernel's default readahead would
        // read 128 KiB or more around each first touch, so that on a cold cache 10,000
        // lookups read nearly all of a 1.3 GB shard from disk. Advice only: a kernel that
        // refuses it leaves the default, which is slower but answers the same.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        let root = RootTable::read(&map).map_err(|why| corrupt(&why))?;
        let version = root.u32_field(0).unwrap_or(0);
        if version != layout::FORMAT_VERSION {
            let dir = path.parent().unwrap_or(Path::new("."));
            let what_to_do = if super::legacy::FORMATS.contains(&version) {
                format!(
                    "convert it with `whereabouts upgrade --db {}`, or import the sources again \
                     (`whereabouts import --replace`)",
                    dir.display()
                )
            } else {
                "import the sources again (`whereabouts import --replace`)".to_string()
            };
            return Err(StoreError::Version(format!(
                "{}: a station database of format version {version}, this build reads {}: \
                 {what_to_do}",
                path.display(),
                layout::FORMAT_VERSION
            )));
        }
        let created = root.u64_field(1).unwrap_or(0);
        let mut vectors: [Range<usize>; 8] = Default::default();
        // FlatBuffers field ids 2..=10: networks, cells, areas, wifi, fences, masts (5, the
        // short-CID index up to format 6, is deprecated).
        let ids = [
            (2, VectorField::Networks),
            (3, VectorField::Cells),
            (4, VectorField::Areas),
            (6, VectorField::Wifi),
            (7, VectorField::CellFences),
            (8, VectorField::WifiFences),
            (9, VectorField::Masts),
            (10, VectorField::MastBlocks),
        ];
        for (id, vf) in ids {
            if let Some(range) = root
                .vector(id, vf.element_size(), vf.name())
                .map_err(|why| corrupt(&why))?
            {
                vectors[field_slot(vf)] = range;
            }
        }
        let shard = Shard {
            path: path.to_path_buf(),
            map,
            created,
            vectors,
        };
        shard.check_references().map_err(|why| corrupt(&why))?;
        Ok(shard)
    }

    /// Checks what lookups trust, in time proportional to the networks only: opening a
    /// shard must not read its stations. Areas and masts are bounds-checked where they are
    /// used instead.
    fn check_references(&self) -> Result<(), String> {
        let cells = self.cells().len();
        let networks = self.networks();
        let mut prev: Option<(u8, u16, u16)> = None;
        for n in networks {
            if n.first as usize + n.count as usize > cells || n.radio().is_none() {
                return Err("network entry points outside the cells".into());
            }
            if prev.is_some_and(|p| p >= n.sort_key()) {
                return Err("networks are not sorted".into());
            }
            prev = Some(n.sort_key());
        }
        if self.cell_fences().len() != cells.div_ceil(FENCE_STRIDE)
            || self.wifi_fences().len() != self.wifi().len().div_ceil(FENCE_STRIDE)
        {
            return Err("fence index does not match the stations".into());
        }
        let blocks = self.mast_blocks();
        if blocks.len() != self.cell_fences().len() + 1
            || blocks
                .last()
                .is_some_and(|&n| n as usize != self.masts().len())
        {
            return Err("mast index does not match the masts".into());
        }
        Ok(())
    }

    fn slice<T: Record>(&self, field: VectorField) -> &[T] {
        let r = &self.vectors[field_slot(field)];
        // SAFETY: open() took every range from RootTable::vector, which checks alignment.
        unsafe { records(&self.map[r.clone()]) }
    }

    /// Tells the kernel that the whole shard is about to be read in order (a merge into a
    /// new database), so that it reads ahead again, as it does not for lookups.
    pub fn expect_sequential_reads(&self) {
        #[cfg(unix)]
        let _ = self.map.advise(memmap2::Advice::Sequential);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn created(&self) -> u64 {
        self.created
    }

    pub fn bytes(&self) -> usize {
        self.map.len()
    }

    pub fn networks(&self) -> &[Network] {
        self.slice(VectorField::Networks)
    }

    pub fn cells(&self) -> &[StationRecord] {
        self.slice(VectorField::Cells)
    }

    pub fn areas(&self) -> &[Area] {
        self.slice(VectorField::Areas)
    }

    pub fn wifi(&self) -> &[StationRecord] {
        self.slice(VectorField::Wifi)
    }

    pub fn cell_fences(&self) -> &[u64] {
        self.slice(VectorField::CellFences)
    }

    pub fn wifi_fences(&self) -> &[u64] {
        self.slice(VectorField::WifiFences)
    }

    pub fn masts(&self) -> &[Mast] {
        self.slice(VectorField::Masts)
    }

    pub fn mast_blocks(&self) -> &[u32] {
        self.slice(VectorField::MastBlocks)
    }

    /// The pooling entry of the site whose first sector is `cells[first]`, if pooling moved
    /// its mast: searched among the masts of its block of cells. Entries are bounds-checked
    /// here rather than all at open: a bad one reads as no mast, never as a panic.
    pub fn mast(&self, first: usize) -> Option<&Mast> {
        let masts = self.masts_of_block(first)?;
        let i = masts
            .binary_search_by_key(&(first as u64), |m| m.cell as u64)
            .ok()?;
        Some(&masts[i])
    }

    /// The position of the cell with `key` among `cells[range]` (one network's cells).
    pub fn find_cell(&self, range: Range<usize>, key: u64) -> Option<usize> {
        find_with_fences(self.cells(), self.cell_fences(), range, key)
    }

    /// The block of WiFi stations that holds `key` if any does; its lines are being
    /// fetched when this returns (see `prefetch_search`).
    pub fn wifi_block(&self, key: u64) -> Range<usize> {
        let w = self.wifi();
        let block = block_with_fences(w.len(), self.wifi_fences(), 0..w.len(), key);
        prefetch_search(&w[block.clone()]);
        block
    }

    /// The position of the WiFi station with `key` in `block` (from `wifi_block`).
    pub fn find_wifi_in(&self, block: Range<usize>, key: u64) -> Option<usize> {
        search_block(self.wifi(), block, key)
    }

    /// The block of `cells[range]` that holds `key` if any cell does, as `wifi_block`: its
    /// lines are being fetched when this returns.
    pub fn cell_block(&self, range: Range<usize>, key: u64) -> Range<usize> {
        let c = self.cells();
        let block = block_with_fences(c.len(), self.cell_fences(), range, key);
        prefetch_search(&c[block.clone()]);
        // The masts of the block too: the cell's site starts in it but for a site cut by the
        // block's start, and its mast is read next ([`Shard::mast`]).
        if let Some(masts) = self.masts_of_block(block.start) {
            prefetch_lines(masts);
        }
        block
    }

    /// The masts of the sites that start in the block of `FENCE_STRIDE` cells holding
    /// `cells[cell]`; None where the index points outside the masts.
    fn masts_of_block(&self, cell: usize) -> Option<&[Mast]> {
        let blocks = self.mast_blocks();
        let b = cell / FENCE_STRIDE;
        let (&lo, &hi) = (blocks.get(b)?, blocks.get(b + 1)?);
        self.masts().get(lo as usize..hi as usize)
    }

    /// The position of the cell with `key` in `block` (from `cell_block`).
    pub fn find_cell_in(&self, block: Range<usize>, key: u64) -> Option<usize> {
        search_block(self.cells(), block, key)
    }

    /// The cells of network `n`, sorted by key.
    pub fn network_cells(&self, n: &Network) -> &[StationRecord] {
        let c = self.cells();
        &c[n.first as usize..(n.first + n.count) as usize]
    }
}

/// Finds `key` in `stations[range]` (sorted), inside the block `fences` point to.
fn find_with_fences(
    stations: &[StationRecord],
    fences: &[u64],
    range: Range<usize>,
    key: u64,
) -> Option<usize> {
    search_block(
        stations,
        block_with_fences(stations.len(), fences, range, key),
        key,
    )
}

/// The position of the station with `key` in `stations[block]` (sorted); None for a block
/// out of bounds.
fn search_block(stations: &[StationRecord], block: Range<usize>, key: u64) -> Option<usize> {
    let lo = block.start;
    stations
        .get(block)?
        .binary_search_by_key(&key, |s| s.key())
        .ok()
        .map(|i| lo + i)
}

/// The block of `range` (at most `FENCE_STRIDE` stations) that holds `key` if any station
/// does: a search among the fences that fall in the range (`fences[i]` is
/// `stations[i * FENCE_STRIDE].key`).
fn block_with_fences(len: usize, fences: &[u64], range: Range<usize>, key: u64) -> Range<usize> {
    let (a, b) = (range.start, range.end.min(len));
    if a >= b {
        return a..a;
    }
    let fa = a.div_ceil(FENCE_STRIDE);
    let fb = b.div_ceil(FENCE_STRIDE).min(fences.len());
    if fa >= fb {
        return a..b;
    }
    match fences[fa..fb].partition_point(|&k| k <= key) {
        // Before the first fence of the range: the partial block that starts the range.
        0 => a..(fa * FENCE_STRIDE).min(b),
        j => {
            let p = (fa + j - 1) * FENCE_STRIDE;
            p.max(a)..(p + FENCE_STRIDE).min(b)
        }
    }
}

/// Asks the CPU for every cache line of `block` (23 or 24 lines for 64 stations) without
/// waiting for them. A binary search of a block not in cache waits for 4 or 5 misses one
/// after another; fetched together they cost about one, and the lookups of a request,
/// prefetched first, overlap too (callgrind cannot see this: measure with the profile
/// driver's thread CPU time in benches/locate.rs).
fn prefetch_search(block: &[StationRecord]) {
    prefetch_lines(block)
}

fn prefetch_lines<T>(block: &[T]) {
    const LINE: usize = 64;
    let start = block.as_ptr() as usize;
    let end = start + std::mem::size_of_val(block);
    // Line by line from the one holding the block's first byte: the iterator over
    // stations cost more instructions than the lookups it speeds up. Four lines a step:
    // the loop's own compare, branch and add cost as much as a prefetch.
    let mut line = start & !(LINE - 1);
    while line + 3 * LINE < end {
        prefetch(line as *const u8);
        prefetch((line + LINE) as *const u8);
        prefetch((line + 2 * LINE) as *const u8);
        prefetch((line + 3 * LINE) as *const u8);
        line += 4 * LINE;
    }
    while line < end {
        prefetch(line as *const u8);
        line += LINE;
    }
}

#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(at as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
