//! The record service: list, create, read, update and archive contacts, companies, deals and
//! tickets (spec "Record collection endpoints", "Record item endpoints", BEHAVIOR 3).
//!
//! Handlers authenticate, check the scope and parse path and query; everything after that is
//! here, in the contract's order of checks (BEHAVIOR 2): query -> 404 -> 409 (archived) -> body
//! and fields (400) -> duplicate (409). A body that did not parse is handed in as its error, so
//! it is reported in that order too.

use super::view::{ExtraProperties, RecordView};
use super::write::{
    apply, check_item, check_required, check_size, key_changes, unique_keys, RecordWrite,
};
use crate::clock::Clock;
use crate::error::DomainError;
use crate::fields::cache::{AccountCatalogues, CatalogueCache};
use crate::fields::catalogue::Catalogue;
use crate::fields::properties::PropertyList;
use crate::fields::validate::{resolve_inputs, validate_fields, FieldInput};
use crate::idempotency::{IdempotencyClaim, IdempotencyCompletion, StoredResponse};
use crate::model::member::MemberRef;
use crate::model::object_type::ObjectType;
use crate::model::record::Record;
use crate::page::cursor::{CursorKey, ListRequest};
use crate::page::ListView;
use crate::store::retry::Kept;
use crate::store::RecordPorts;
use crate::store::{record_position, write_rounds, Backoff, RoundError, StoreError, Turns};
use crate::types::ids::{AccountId, RecordId};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The record operations of one warm instance: the store, the clock and the catalogue cache.
pub struct RecordService {
    store: Arc<dyn RecordPorts>,
    clock: Arc<dyn Clock>,
    catalogues: Arc<CatalogueCache>,
    /// Changes of one record take turns in this instance ([`Turns`]).
    turns: Turns,
}

/// Who is writing: the account of the token and the actor recorded as `archived_by`.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The token's `account_id`.
    pub account_id: AccountId,
    /// The token's `sub` (the API client id).
    pub actor: &'a str,
}

impl RecordService {
    /// A service over `store`.
    pub fn new(
        store: Arc<dyn RecordPorts>, clock: Arc<dyn Clock>, catalogues: Arc<CatalogueCache>,
    ) -> Self {
        Self {
            store,
            clock,
            catalogues,
            turns: Turns::default(),
        }
    }

    /// The account's catalogue of `object_type`, shared with the cache (not copied: a copy cost
    /// more than the rest of a `GET`).
    async fn catalogue(
        &self, account_id: AccountId, object_type: ObjectType,
    ) -> Result<TypeCatalogue, DomainError> {
        let all = self.catalogues.get(self.store.as_ref(), account_id).await?;
        Ok(TypeCatalogue { all, object_type })
    }

    /// `GET /{type}`: `{data, pagination: {limit, offset, count, next_after}}` by creation
    /// time, defaults plus `properties` (the raw parameter, parsed against the account's
    /// catalogue); `after` cursors are opened and sealed with `cursors` (BEHAVIOR 11).
    ///
    /// Errors: 400 `Invalid property name: <name>`; 400 naming `after` for a cursor this list
    /// did not issue.
    pub async fn list(
        &self, account_id: AccountId, object_type: ObjectType, properties: Option<&str>,
        request: &ListRequest, cursors: &CursorKey,
    ) -> Result<ListView<RecordView>, DomainError> {
        let (list, page) = request.open(cursors, account_id, object_type.as_str())?;
        let catalogue = self.catalogue(account_id, object_type).await?;
        let extra = PropertyList::parse(properties, &catalogue)?;
        let listed = self
            .store
            .list_records(account_id, object_type, &page)
            .await?;
        let extra = ExtraProperties::new(&catalogue, &extra);
        let view = |r: &Record| RecordView::of(Arc::new(r.clone()), &catalogue, &extra);
        Ok(cursors.answer(&list, &page, listed, view, record_position))
    }

    /// `GET /{type}/{id}`: the record (archived ones too), defaults plus `properties`. `id` is
    /// `None` when the path id is not a UUID (no such record).
    ///
    /// Errors: 400 invalid `properties`; 404 when the id is not a record of this account and type.
    pub async fn get(
        &self, account_id: AccountId, object_type: ObjectType, id: Option<RecordId>,
        properties: Option<&str>,
    ) -> Result<RecordView, DomainError> {
        let catalogue = self.catalogue(account_id, object_type).await?;
        let extra = PropertyList::parse(properties, &catalogue)?;
        let record = self.find_shared(account_id, object_type, id).await?;
        Ok(RecordView::of(
            record,
            &catalogue,
            &ExtraProperties::new(&catalogue, &extra),
        ))
    }

    /// `POST /{type}`: validates every field, then creates the record and claims its unique
    /// keys in one atomic store write. Returns the 201 body: the default fields plus every field
    /// the request set, in stored form.
    ///
    /// Errors: 400 unknown / system-managed field, validation, required-on-create; 409 duplicate
    /// active unique key (`field` set).
    pub async fn create(
        &self, caller: Caller<'_>, object_type: ObjectType, write: RecordWrite,
    ) -> Result<RecordView, DomainError> {
        self.create_completing(caller, object_type, write, None)
            .await
    }

    /// [`Self::create`] for a request holding the `Idempotency-Key` `claim` (BEHAVIOR 10): the
    /// 201 body is stored for replay in the same atomic write as the record.
    ///
    /// Errors: as [`Self::create`]; 409 when the claim's lease was lost before the write.
    pub async fn create_completing(
        &self, caller: Caller<'_>, object_type: ObjectType, write: RecordWrite,
        claim: Option<&IdempotencyClaim>,
    ) -> Result<RecordView, DomainError> {
        let catalogue = self.catalogue(caller.account_id, object_type).await?;
        let inputs = self
            .resolve(
                caller.account_id,
                validate_fields(&catalogue, &write.fields)?,
            )
            .await?;
        let now = self.clock.now();
        let mut values = BTreeMap::new();
        apply(&mut values, &catalogue, &inputs, now);
        check_required(object_type, &values)?;
        check_size(&BTreeMap::new(), &values)?;
        let record = Record {
            id: RecordId::new_v7(),
            account_id: caller.account_id,
            object_type,
            values,
            created_at: now,
            updated_at: now,
            archived_at: None,
            archived_by: None,
            version: 1,
        };
        let keys = unique_keys(&catalogue, &record);
        let set = PropertyList::from_names(write.fields.keys().cloned());
        let view = RecordView::new(&record, &catalogue, &set);
        let completion = match claim {
            Some(claim) => Some(IdempotencyCompletion {
                claim: claim.clone(),
                response: StoredResponse::json(201, &view)?,
            }),
            None => None,
        };
        check_item(&record, None, completion.as_ref())?;
        match self
            .store
            .create_record_completing(&record, &keys, completion.as_ref())
            .await
        {
            Ok(()) => {}
            Err(StoreError::Duplicate { field }) => return Err(duplicate(object_type, field)),
            Err(e) => return Err(e.into()),
        }
        Ok(view)
    }

    /// `PATCH /{type}/{id}`: changes only the keys sent, refreshes `updated_at` /
    /// `last_modified_date`, moves changed unique keys atomically. `write` is the body as
    /// parsed; its error is reported after 404 and 409 (BEHAVIOR 2).
    ///
    /// Errors, in this order: 400 invalid `properties`; 404; 409 `Cannot update an archived
    /// object`; 400 body and field validation; 409 duplicate (`field` set); 409 when the
    /// record kept changing until the retry deadline (a write that lost a race reads the record
    /// again and applies again until then: [`crate::store::retry`]).
    pub async fn update(
        &self, caller: Caller<'_>, object_type: ObjectType, id: Option<RecordId>,
        properties: Option<&str>, write: Result<RecordWrite, DomainError>,
    ) -> Result<RecordView, DomainError> {
        let catalogue = self.catalogue(caller.account_id, object_type).await?;
        let extra = PropertyList::parse(properties, &catalogue)?;
        let _turn = self.turns.take(turn_key(id)).await;
        let current = self.find(caller.account_id, object_type, id).await?;
        if !current.is_active() {
            return Err(archived_conflict());
        }
        let write = write?;
        let inputs = self
            .resolve(
                caller.account_id,
                validate_fields(&catalogue, &write.fields)?,
            )
            .await?;
        let (catalogue, extra, inputs) = (&catalogue, &extra, &inputs);
        write_rounds(&mut Backoff::new(), current, |Kept(current, _), n| {
            Box::pin(async move {
                if n > 0 {
                    *current = self
                        .find(caller.account_id, object_type, Some(current.id))
                        .await?;
                    if !current.is_active() {
                        return Err(archived_conflict().into());
                    }
                }
                let now = self.clock.now().max(current.updated_at);
                let mut next = current.clone();
                apply(&mut next.values, catalogue, inputs, now);
                check_size(&current.values, &next.values)?;
                next.updated_at = now;
                next.version = current.version + 1;
                check_item(&next, Some(current), None)?;
                let (claimed, released) = key_changes(catalogue, current, &next);
                match self
                    .store
                    .update_record(&next, current.version, &claimed, &released)
                    .await
                {
                    Ok(()) => Ok(RecordView::new(&next, catalogue, extra)),
                    Err(StoreError::Duplicate { field }) => {
                        Err(duplicate(object_type, field).into())
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    /// `DELETE /{type}/{id}`: archives the record (retained), releasing its unique keys. Returns
    /// the record with default properties, `archived` set and `archived_by` = the caller's actor.
    ///
    /// Errors: 404 when not found or already archived; 409 when the record kept changing until
    /// the retry deadline.
    pub async fn archive(
        &self, caller: Caller<'_>, object_type: ObjectType, id: Option<RecordId>,
    ) -> Result<RecordView, DomainError> {
        let catalogue = self.catalogue(caller.account_id, object_type).await?;
        let _turn = self.turns.take(turn_key(id)).await;
        let catalogue = &catalogue;
        write_rounds(&mut Backoff::new(), (), |_, _| {
            Box::pin(async move {
                let current = self.find(caller.account_id, object_type, id).await?;
                if !current.is_active() {
                    return Err(DomainError::not_found(object_type.not_found_message()).into());
                }
                let now = self.clock.now().max(current.updated_at);
                let mut next = current.clone();
                next.archived_at = Some(now);
                next.archived_by = Some(caller.actor.to_string());
                next.updated_at = now;
                next.version = current.version + 1;
                let released = unique_keys(catalogue, &current);
                self.store
                    .update_record(&next, current.version, &[], &released)
                    .await?;
                Ok(RecordView::new(&next, catalogue, &PropertyList::none()))
            })
        })
        .await
        .map_err(RoundError::answer)
    }

    /// The record `id` of the account and type, as the store shares it (a `GET` only reads it).
    ///
    /// Errors: 404 with the type's message when `id` is `None` (a path id that is not a UUID
    /// names no record, BEHAVIOR 3) or names no record of this account and type.
    async fn find_shared(
        &self, account_id: AccountId, object_type: ObjectType, id: Option<RecordId>,
    ) -> Result<Arc<Record>, DomainError> {
        let not_found = || DomainError::not_found(object_type.not_found_message());
        self.store
            .get_record_shared(account_id, object_type, id.ok_or_else(not_found)?)
            .await?
            .ok_or_else(not_found)
    }

    /// [`Self::find_shared`] as a copy of its own, for a writer that changes it.
    async fn find(
        &self, account_id: AccountId, object_type: ObjectType, id: Option<RecordId>,
    ) -> Result<Record, DomainError> {
        self.find_shared(account_id, object_type, id)
            .await
            .map(Arc::unwrap_or_clone)
    }

    /// Turns validated inputs into the values to write (`None` clears), resolving `user` inputs
    /// to the e-mail of an active member of the account (by id or e-mail).
    ///
    /// Errors: 400 naming the field when no active member matches.
    async fn resolve(
        &self, account_id: AccountId, inputs: Vec<(String, FieldInput)>,
    ) -> Result<Vec<(String, Option<String>)>, DomainError> {
        let mut named = Vec::new();
        for wanted in inputs.iter().filter_map(|(_, input)| input.member_ref()) {
            let member = match wanted {
                MemberRef::Id(id) => self.store.get_member(account_id, id).await?,
                MemberRef::Email(email) => {
                    self.store
                        .find_member_by_email(account_id, email.as_str())
                        .await?
                }
                MemberRef::Nobody => None,
            };
            named.extend(member);
        }
        resolve_inputs(inputs, |wanted| wanted.find_active(&named))
    }
}

/// The key of a record's turn ([`Turns`]): its id (empty for a path id that is not a UUID,
/// which names no record).
fn turn_key(id: Option<RecordId>) -> String {
    id.map_or_else(String::new, |id| id.to_string())
}

fn archived_conflict() -> DomainError {
    DomainError::conflict("Cannot update an archived object")
}

fn duplicate(object_type: ObjectType, field: String) -> DomainError {
    DomainError::Conflict {
        message: format!(
            "A {} with this {field} already exists",
            object_type.singular()
        ),
        field: Some(field),
    }
}

/// One object type's catalogue inside the cached catalogues of an account.
struct TypeCatalogue {
    all: Arc<AccountCatalogues>,
    object_type: ObjectType,
}

impl std::ops::Deref for TypeCatalogue {
    type Target = Catalogue;

    fn deref(&self) -> &Catalogue {
        self.all.get(self.object_type)
    }
}
