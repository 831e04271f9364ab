//! Where the items of a Kubernetes protobuf list are while its answer is still arriving
//! ([`ItemScanner`]), so that they can be decoded before its last byte. [`super::kube_protobuf`]
//! reads and judges the whole answer.

use super::kube_protobuf::MAGIC;

/// Finds a list's items while its answer is still arriving, so that they can be decoded before
/// its last byte (the API server writes a large list item by item, over tens of milliseconds).
/// It only says where complete items are: [`list`] reads the whole answer at the end all the
/// same, and is the one that judges it.
#[derive(Debug, Default)]
pub struct ItemScanner {
    /// Where the next field to read starts in the answer.
    at: usize,
    /// Where the list's message (`runtime.Unknown.raw`) ends, once its start has arrived.
    list_end: Option<usize>,
    /// Something not shaped like a list was met: no more items are said.
    stopped: bool,
}

/// One field of a message at a position of an answer that may still be arriving.
enum FieldAt {
    /// Its number, its value's bytes when length-delimited, and where the next field starts.
    Complete {
        number: u32,
        bytes: Option<std::ops::Range<usize>>,
        next: usize,
    },
    /// Its bytes have not all arrived.
    Incomplete,
    /// Not a protobuf field.
    Malformed,
}

/// The varint at `at` and where it ends; `Ok(None)` while its last byte has not arrived.
fn varint_at(buf: &[u8], at: usize) -> Result<Option<(u64, usize)>, ()> {
    let mut value = 0u64;
    for (i, shift) in (0..64).step_by(7).enumerate() {
        let Some(&byte) = buf.get(at + i) else {
            return Ok(None);
        };
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(Some((value, at + i + 1)));
        }
    }
    Err(())
}

fn field_at(buf: &[u8], at: usize) -> FieldAt {
    let (key, at) = match varint_at(buf, at) {
        Ok(Some(read)) => read,
        Ok(None) => return FieldAt::Incomplete,
        Err(()) => return FieldAt::Malformed,
    };
    let Ok(number) = u32::try_from(key >> 3) else {
        return FieldAt::Malformed;
    };
    let (bytes, next) = match key & 7 {
        0 => match varint_at(buf, at) {
            Ok(Some((_, next))) => (None, next),
            Ok(None) => return FieldAt::Incomplete,
            Err(()) => return FieldAt::Malformed,
        },
        1 => (None, at + 8),
        5 => (None, at + 4),
        2 => match varint_at(buf, at) {
            Ok(Some((n, start))) => {
                match usize::try_from(n).ok().and_then(|n| start.checked_add(n)) {
                    Some(end) => (Some(start..end), end),
                    None => return FieldAt::Malformed,
                }
            }
            Ok(None) => return FieldAt::Incomplete,
            Err(()) => return FieldAt::Malformed,
        },
        _ => return FieldAt::Malformed,
    };
    if next > buf.len() {
        return FieldAt::Incomplete;
    }
    FieldAt::Complete {
        number,
        bytes,
        next,
    }
}

impl ItemScanner {
    /// The items that became complete in `answer` (the answer so far, of which the earlier
    /// calls saw a beginning) since the last call: each item's bytes as positions in it.
    pub fn complete_items(&mut self, answer: &[u8]) -> Vec<std::ops::Range<usize>> {
        let mut items = Vec::new();
        if self.stopped {
            return items;
        }
        let Some(list_end) = self.list_end.or_else(|| self.list_start(answer)) else {
            return items;
        };
        while self.at < list_end {
            match field_at(answer, self.at) {
                FieldAt::Complete { next, .. } if next > list_end => {
                    self.stopped = true;
                    break;
                }
                FieldAt::Complete {
                    number,
                    bytes,
                    next,
                } => {
                    if number == 2 {
                        match bytes {
                            Some(item) => items.push(item),
                            None => {
                                self.stopped = true;
                                break;
                            }
                        }
                    }
                    self.at = next;
                }
                FieldAt::Incomplete => break,
                FieldAt::Malformed => {
                    self.stopped = true;
                    break;
                }
            }
        }
        items
    }

    /// Where the list's message ends in the answer, once that has arrived.
    pub fn list_end(&self) -> Option<usize> {
        self.list_end
    }

    /// Where the list's message ends, once the answer's envelope up to its start has arrived:
    /// the magic, then `runtime.Unknown`'s fields before `raw` (2). `self.at` is then its start.
    fn list_start(&mut self, answer: &[u8]) -> Option<usize> {
        if answer.len() < MAGIC.len() {
            return None;
        }
        if !answer.starts_with(MAGIC) {
            self.stopped = true;
            return None;
        }
        self.at = self.at.max(MAGIC.len());
        loop {
            // The envelope's fields before `raw` are small: only `raw` itself need not have
            // arrived whole.
            let (key, after_key) = match varint_at(answer, self.at) {
                Ok(Some(read)) => read,
                Ok(None) => return None,
                Err(()) => {
                    self.stopped = true;
                    return None;
                }
            };
            if key == (2 << 3 | 2) {
                return match varint_at(answer, after_key) {
                    Ok(Some((n, start))) => {
                        let end = usize::try_from(n).ok().and_then(|n| start.checked_add(n));
                        self.stopped = end.is_none();
                        self.at = start;
                        self.list_end = end;
                        end
                    }
                    Ok(None) => None,
                    Err(()) => {
                        self.stopped = true;
                        None
                    }
                };
            }
            match field_at(answer, self.at) {
                FieldAt::Complete { next, .. } => self.at = next,
                FieldAt::Incomplete => return None,
                FieldAt::Malformed => {
                    self.stopped = true;
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::kube_protobuf::list;
    use crate::formats::kube_protobuf::tests::fixture;

    /// Where `list` finds each item of `body`, as positions in it.
    fn item_positions(body: &[u8]) -> Vec<std::ops::Range<usize>> {
        let base = body.as_ptr() as usize;
        list(body)
            .unwrap()
            .items
            .iter()
            .map(|item| {
                let start = item.as_ptr() as usize - base;
                start..start + item.len()
            })
            .collect()
    }

    /// The items the scanner says are complete when `body` arrives `step` bytes at a time,
    /// checking that each had arrived whole when said.
    fn scanned(body: &[u8], step: usize) -> Vec<std::ops::Range<usize>> {
        let mut scanner = ItemScanner::default();
        let mut found = Vec::new();
        let mut arrived = 0;
        while arrived < body.len() {
            arrived = (arrived + step).min(body.len());
            for item in scanner.complete_items(&body[..arrived]) {
                assert!(
                    item.end <= arrived,
                    "{item:?} said before byte {}",
                    item.end
                );
                found.push(item);
            }
        }
        found
    }

    /// A real server's lists, arriving a byte, a few bytes or a TLS record at a time, or whole:
    /// the scanner finds the items `list` finds, each once, in their order.
    #[test]
    fn the_scanner_finds_a_list_s_items_as_they_arrive() {
        for name in ["pods.pb", "services.pb", "namespaces.pb", "events.pb"] {
            let body = fixture(name);
            let expected = item_positions(&body);
            assert!(!expected.is_empty(), "{name}");
            for step in [1, 7, 100, 16384, body.len()] {
                assert_eq!(scanned(&body, step), expected, "{name} in steps of {step}");
            }
        }
    }

    /// What is not a protobuf list gives no item, and the scanner never reads past what has
    /// arrived: a JSON answer, a cut list, garbage, an envelope that claims more than it has.
    #[test]
    fn the_scanner_finds_nothing_in_what_is_not_a_list() {
        assert!(scanned(b"{\"kind\":\"PodList\",\"items\":[]}", 3).is_empty());
        assert!(scanned(b"k8s", 1).is_empty());
        assert!(scanned(b"k8s\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 1).is_empty());
        // `raw` claims 2^40 bytes, and its first item 5 of which 1 came.
        let mut huge = MAGIC.to_vec();
        huge.extend([0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x12, 0x05, 0x0a]);
        assert!(scanned(&huge, 1).is_empty());
        // A list cut short says the items before the cut, and no more.
        let body = fixture("pods.pb");
        let expected = item_positions(&body);
        let cut = expected[1].end + 10;
        assert_eq!(scanned(&body[..cut], 1000), expected[..2].to_vec());
    }
}
