//! Generational handle table: handle = generation << 32 | slot. Generation 0 is never issued,
//! so 0 is never a valid handle. Freeing bumps the slot's generation (old handles go stale);
//! a slot whose generation would wrap is retired instead of reused.

use std::rc::Rc;

use tinyrustlm_core::model::Model;
use tinyrustlm_core::{TrResult, TrReturn};

use crate::SessionObject;

pub enum Object {
    Model(Rc<Model>),
    Session(Box<SessionObject>),
}

struct Slot {
    generation: u32,
    object: Option<Object>,
}

#[derive(Default)]
pub struct Handles {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

fn split(handle: u64) -> (u32, u32) {
    ((handle >> 32) as u32, handle as u32)
}

impl Handles {
    pub fn insert(&mut self, object: Object) -> TrReturn<u64> {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = u32::try_from(self.slots.len()).map_err(|_| TrResult::OutOfMemory)?;
                self.slots.try_reserve(1).map_err(|_| TrResult::OutOfMemory)?;
                self.slots.push(Slot { generation: 1, object: None });
                slot
            }
        };
        let entry = &mut self.slots[slot as usize];
        entry.object = Some(object);
        Ok(((entry.generation as u64) << 32) | slot as u64)
    }

    /// The live object behind `handle`: InvalidHandle for a slot or generation never issued,
    /// StaleHandle for a freed one.
    fn get(&mut self, handle: u64) -> TrReturn<&mut Object> {
        let (generation, slot) = split(handle);
        let entry = self.slots.get_mut(slot as usize).ok_or(TrResult::InvalidHandle)?;
        if generation == 0 || generation > entry.generation {
            return Err(TrResult::InvalidHandle);
        }
        if generation < entry.generation {
            return Err(TrResult::StaleHandle);
        }
        entry.object.as_mut().ok_or(TrResult::InvalidHandle)
    }

    pub fn model(&mut self, handle: u64) -> TrReturn<Rc<Model>> {
        match self.get(handle)? {
            Object::Model(model) => Ok(model.clone()),
            Object::Session(_) => Err(TrResult::InvalidHandle),
        }
    }

    pub fn session(&mut self, handle: u64) -> TrReturn<&mut SessionObject> {
        match self.get(handle)? {
            Object::Session(session) => Ok(session),
            Object::Model(_) => Err(TrResult::InvalidHandle),
        }
    }

    pub fn remove(&mut self, handle: u64) -> TrReturn<()> {
        self.get(handle)?;
        let (_, slot) = split(handle);
        let entry = &mut self.slots[slot as usize];
        entry.object = None;
        // A slot whose generation would wrap is retired: never reissued.
        if let Some(next) = entry.generation.checked_add(1) {
            entry.generation = next;
            self.free.push(slot);
        }
        Ok(())
    }
}
