#ifndef RUVLLM_STORE_ROLES_HPP
#define RUVLLM_STORE_ROLES_HPP

// The three roles Ruvector plays for the engine, over one memory_store (so
// policies, sessions and witness entries share one durable directory, one
// log and one graph, and relate through typed edges):
//
//   policy_store<Store>   policy_store.hpp   learned policies and patterns
//   session_index<Store>  session_index.hpp  session state, encrypted at rest
//   witness_log<Store>    witness_log.hpp    asynchronous audit trail
//
// role_store_options(dimension) (memory_store.hpp) lays out the four vector
// spaces the roles use by default (role_space::policy, session,
// witness_query, witness_response):
//
//   namespace st = ruvllm::store;
//   using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f16>;
//   auto store = store_t::open("./state", st::role_store_options(768)).value();
//   auto policies = st::policy_store<store_t>::open(store).value();
//   auto sessions = st::session_index<store_t>::open(store, {.key = key}).value();
//   auto witness = st::witness_log<store_t>::open(store).value();
//   (void)witness.start();  // or drive witness.pump() from a thread you own

#include "ruvllm/store/memory_store.hpp"
#include "ruvllm/store/policy_store.hpp"
#include "ruvllm/store/session_index.hpp"
#include "ruvllm/store/witness_log.hpp"

#endif  // RUVLLM_STORE_ROLES_HPP
