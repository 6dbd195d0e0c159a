"""Microsoft Agent Framework long-term memory backed by the memory-core REST API.

``MemoryCoreContextProvider`` is an ``agent_framework.ContextProvider``. Add it to an
``Agent`` with ``context_providers=[...]``. It maps the provider lifecycle onto the
service as the SDW conformance profile (seed 002) describes:

* ``before_run`` first handles a "forget ..." request from the user, then reads the
  memory this agent may see: the newest of the combined document that fits in
  ``max_memory_chars`` (the default; the service applies the budget and says what it
  left out), a search with the latest user input (``retrieval="search"``), or the
  newest memory plus the best search hits for the user's message when memory does
  not fit (``retrieval="auto"``). The memory reaches the model as a
  *context message*, never as instructions, wrapped in ``<untrusted_memory_<nonce>>`` ...
  ``</untrusted_memory_<nonce>>`` (a random nonce per block) with a note that it is data
  and names that tag. Anything in the stored text a reader would take for a provider tag
  (invisible characters, look-alike brackets, any case) is escaped, so a stored memory
  cannot close the block early.
* ``after_run`` persists according to ``persist``: ``"none"``; ``"remember"`` (only
  explicit "remember ..." requests from the user); ``"chat_summary"`` (the text the
  caller's ``chat_summary`` callable returns). Every write is a ``POST memory/append``
  tagged ``mem_type:*`` plus the seed's ``session_id:*`` and ``agent_id:*`` hash tags.
* A "forget ..." request becomes the service's deletion flow (``DELETE
  memory/entries/{id}`` for the best matching entry, ``POST memory/clear`` for
  "forget everything"). The model is told the service's answer as it is, e.g.
  "deletion requested, pending operator approval"; the provider never says that a
  deletion happened unless the service says so.
* With ``memory_mode="off"`` (the "temporary chat") nothing is read, stored or deleted and
  no request is sent; the model gets a ``<memory_off>`` block. The same block is given when
  the service answers memory off (``X-MEMORY-MODE: off``) or the operator disabled memory
  for the agent (403 ``agent_memory_disabled``). An agent limited to groups the user is
  not in gives that user their own (user-scope) memory.
* When the service cannot be reached (or refuses the call), the agent still runs.
  The failure is logged, and the model is told that memory is *unavailable*, which
  is never presented as "no memory".

Outcomes are also kept in the provider's session state (``session.state[source_id]``,
JSON values only): ``last_recall``, ``last_forget`` and ``last_writes``.

Needs ``agent-framework-core`` (``pip install -r requirements-agent-framework.txt``);
the Function app never imports this package.

The package's modules, one concept each: ``provider`` (the lifecycle), ``service_calls``
(the requests to the service), ``blocks`` (the text the model sees), ``user_requests``
(what counts as "remember ..." or "forget ...") and ``configuration`` (the settings).
Import the public names from this package; the modules are internal. Every module logs
on the ``memory_core.integrations.agent_framework`` logger.
"""

from memory_core.integrations.agent_framework.blocks import (
    MEMORY_BLOCK_TAG,
    MEMORY_OFF_BLOCK_TAG,
    MESSAGE_KIND_PROPERTY,
    NOTICE_BLOCK_TAG,
    UNAVAILABLE_BLOCK_TAG,
    escape_delimiters,
)
from memory_core.integrations.agent_framework.configuration import (
    MAX_MEMORY_CHARS,
    MemoryCoreConfigurationError,
    MemoryMode,
    MemType,
    Persist,
    Retrieval,
    WriteScope,
)
from memory_core.integrations.agent_framework.provider import (
    BearerTokenSource,
    ChatSummarySource,
    MemoryCoreContextProvider,
)
from memory_core.integrations.agent_framework.service_calls import PENDING_APPROVAL_MESSAGE

__all__ = [
    "MAX_MEMORY_CHARS",
    "MEMORY_BLOCK_TAG",
    "MEMORY_OFF_BLOCK_TAG",
    "MESSAGE_KIND_PROPERTY",
    "NOTICE_BLOCK_TAG",
    "PENDING_APPROVAL_MESSAGE",
    "UNAVAILABLE_BLOCK_TAG",
    "BearerTokenSource",
    "ChatSummarySource",
    "MemType",
    "MemoryCoreConfigurationError",
    "MemoryCoreContextProvider",
    "MemoryMode",
    "Persist",
    "Retrieval",
    "WriteScope",
    "escape_delimiters",
]
