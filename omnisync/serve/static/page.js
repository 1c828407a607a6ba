// The page of `omnisync serve`: plain JavaScript, no build step, nothing fetched but this server's API.
// The bearer token is typed in and kept in sessionStorage (this tab only); every text from the
// server is shown with textContent, never parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "omnisync.token";
let busy = false;

function say(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function headers(extra = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: "Bearer " + token, ...extra } : extra;
}

async function failure(response) {
  const body = await response.json().catch(() => null);
  const error = body && body.error;
  return new Error(error ? `${error.type}: ${error.message}` : `the server answered ${response.status}`);
}

async function api(method, path, body) {
  const options = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) options.body = JSON.stringify(body);
  const response = await fetch(path, options);
  if (!response.ok) throw await failure(response);
  return response.json();
}

const agentPath = () => "/agents/" + encodeURIComponent($("agent").value);
const sessionPath = () => agentPath() + "/sessions/" + encodeURIComponent($("session").value.trim());

// --- server-sent events, read from a fetch (EventSource cannot send the Authorization header) ---

async function* serverSentEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue; // a comment is a keep-alive
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") name = text;
        else if (field === "data") data += (data ? "\n" : "") + text;
      }
      if (data) yield { name, data: JSON.parse(data) };
    }
  }
}

// Follow a run's events as they come; returns the ending event's data.
async function follow(method, path, body) {
  const init = { method, headers: headers({ Accept: "text/event-stream", "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  const answer = $("answer");
  let deltas = Number(answer.dataset.deltas || 0);
  for await (const event of serverSentEvents(response)) {
    const data = event.data;
    if (data.run_id) {
      $("run").textContent = data.run_id;
      if (busy && !$("stop").dataset.stopping) $("stop").disabled = false;
    }
    if (event.name === "text_delta") {
      answer.append(data.text);
      answer.dataset.deltas = String(++deltas);
    } else if (event.name === "tool_call") {
      $("events").append(element("li", "tool-call", `${data.name}(${data.arguments})`));
    } else if (event.name === "tool_result") {
      $("events").append(element("li", "tool-result", `${data.name} → ${data.content}`));
    } else if (event.name === "run_paused" || event.name === "run_finished") {
      return data.result;
    } else if (event.name === "run_failed") {
      throw new Error(`the run failed: ${data.error.type}: ${data.error.message}`);
    }
  }
  throw new Error("the stream ended before the run did: reload the session to see where it stands");
}

function clearAnswer() {
  $("answer").textContent = "";
  $("answer").dataset.deltas = "0";
  $("answer").dataset.status = "";
  $("events").textContent = "";
  $("approvals").textContent = "";
  $("run").textContent = "";
}

async function settle(result) {
  $("answer").dataset.status = result.status;
  if (result.status === "cancelled") {
    say(`run ${result.run_id}: cancelled`);
    await reloadAfterRun();
    return;
  }
  if (result.status === "awaiting_approval") {
    showApprovals(result);
    say(`run ${result.run_id} waits for your decision`);
  } else if (result.status === "awaiting_budget") {
    showBudget(result);
    say(`run ${result.run_id} reached its ${result.budget_request.limit}: grant more to go on`);
  } else {
    say(`run ${result.run_id}: ${result.status}`);
  }
  await reloadAfterRun();
}

async function reloadAfterRun() {
  try {
    await Promise.all([loadHistory(), loadSessions()]);
  } catch (error) {
    say(`the run ended, but its history could not be read: ${error.message}`, true);
    return;  // the answer stays shown: the history does not hold it here yet
  }
  $("answer").textContent = ""; // the history now holds the answer: it is shown there only
}

async function drive(method, path, body) {
  busy = true;
  let result;
  try {
    result = await follow(method, path, body);
  } catch (error) {
    say(error.message, true);
    await loadHistory().catch(() => {});
    return;
  } finally {
    busy = false;
    $("stop").disabled = true;
    delete $("stop").dataset.stopping;
  }
  await settle(result);
}

// --- Stop: cancel the run under way; its stream then ends with the run cancelled ---

async function stop() {
  const run = $("run").textContent;
  if (!busy || !run) return;
  $("stop").disabled = true;
  $("stop").dataset.stopping = "1";
  say(`stopping run ${run}…`);
  try {
    await api("POST", `${agentPath()}/runs/${encodeURIComponent(run)}/cancel`, {});
  } catch (error) {
    say(error.message, true);
  }
}

// --- approvals: decide each paused call, then resume once all are decided ---

function showApprovals(result) {
  const box = $("approvals");
  box.textContent = "";
  const undecided = new Set(result.approvals.map((call) => call.id));
  for (const call of result.approvals) {
    const row = element("div", "approval");
    row.dataset.callId = call.id;
    row.append(element("code", "", `${call.tool}(${call.arguments})`));
    for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
      const button = element("button", approved ? "approve" : "deny", label);
      button.type = "button";
      button.addEventListener("click", async () => {
        row.querySelectorAll("button").forEach((b) => (b.disabled = true));
        try {
          await api("POST", `${agentPath()}/runs/${encodeURIComponent(result.run_id)}/approvals`, { call_id: call.id, approved });
        } catch (error) {
          row.querySelectorAll("button").forEach((b) => (b.disabled = false));
          say(error.message, true);
          return;
        }
        row.append(element("span", "decision", approved ? "approved" : "denied"));
        undecided.delete(call.id);
        if (undecided.size === 0) {
          box.textContent = "";
          await drive("POST", `${agentPath()}/runs/${encodeURIComponent(result.run_id)}/resume`, {});
        }
      });
      row.append(button);
    }
    box.append(row);
  }
}

// --- budget: raise the limit the run reached, then resume ---

const EXTRA_FIELD = { max_tool_calls: "extra_tool_calls", max_tokens: "extra_tokens", max_steps: "extra_steps" };

function showBudget(result) {
  const box = $("approvals");
  box.textContent = "";
  const wanted = result.budget_request;
  const row = element("form", "budget");
  row.append(element("span", "", `${wanted.limit}: ${wanted.used} used of ${wanted.allowed} allowed. Grant`));
  const extra = element("input");
  extra.type = "number";
  extra.min = "1"; // the browser refuses to submit less, or a fraction
  extra.required = true;
  extra.value = wanted.limit === "max_tokens" ? "1000" : "1";
  extra.setAttribute("aria-label", "how many more");
  const button = element("button", "grant", "Grant and resume");
  button.type = "submit";
  row.append(extra, element("span", "", "more "), button);
  row.addEventListener("submit", async (event) => {
    event.preventDefault();
    const more = Number(extra.value);
    button.disabled = true;
    const run = `${agentPath()}/runs/${encodeURIComponent(result.run_id)}`;
    try {
      await api("POST", run + "/budget", { [EXTRA_FIELD[wanted.limit]]: more });
    } catch (error) {
      button.disabled = false;
      say(error.message, true);
      return;
    }
    box.textContent = "";
    await drive("POST", run + "/resume", {});
  });
  box.append(row);
}

// --- agents, sessions, history ---

function contentText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : `[${part.type}]`)).join(" ");
}

// Two loads of one list can be under way at once (connecting, then a run that settles): each
// counts itself, and only the latest started draws, so a slow earlier answer never covers a newer one.
const loads = { history: 0, sessions: 0 };

async function loadHistory() {
  const list = $("history");
  if (!$("agent").value || !$("session").value.trim()) return;
  const load = ++loads.history;
  const path = sessionPath();
  const messages = [];
  for (let cursor = null; ; ) {  // with the inactive ones, for their seqs; those are not shown
    const page = await api("GET", path + "/messages?include_inactive=true&limit=500" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
    messages.push(...page.messages.filter((message) => message.status === "active"));
    if (!(cursor = page.next_cursor)) break;
  }
  if (load !== loads.history) return;
  list.textContent = "";
  for (const message of messages) {
    const item = element("li", "message " + message.role);
    item.dataset.seq = String(message.seq);
    item.append(element("span", "role", message.role));
    const calls = (message.tool_calls || []).map((c) => `${c.function.name}(${c.function.arguments})`);
    item.append(element("span", "text", [contentText(message.content), ...calls].filter(Boolean).join(" ")));
    const fork = element("button", "fork", "Fork here");
    fork.type = "button";
    fork.title = "a new session with the history up to this message";
    fork.addEventListener("click", () => forkAt(message.seq));
    item.append(fork);
    list.append(item);
  }
  if (!messages.length) list.append(element("li", "empty", "no messages in this session yet"));
}

// --- fork, regenerate, search (history_routes.py) ---

async function forkAt(seq) {
  try {
    const { session_id } = await api("POST", sessionPath() + "/fork", { at: seq });
    say(`forked into ${session_id}`);
    await loadSessions();
    await openSession(session_id);
  } catch (error) {
    say(error.message, true);
  }
}

async function regenerate() {
  if (busy || !$("agent").value || !$("session").value.trim()) return;
  clearAnswer();
  say("regenerating…");
  await drive("POST", sessionPath() + "/regenerate", {});
}

async function search(query) {
  const list = $("hits");
  list.textContent = "";
  try {
    const { hits } = await api("GET", agentPath() + "/search?limit=20&q=" + encodeURIComponent(query));
    for (const hit of hits) {
      const button = element("button", "hit", `${hit.session_id} #${hit.seq}: ${hit.snippet}`);
      button.type = "button";
      button.addEventListener("click", () => openSession(hit.session_id, hit.seq));
      const item = element("li");
      item.append(button);
      list.append(item);
    }
    if (!hits.length) list.append(element("li", "empty", "nothing found"));
  } catch (error) {
    say(error.message, true);
  }
}

async function loadSessions() {
  const load = ++loads.sessions;
  const { sessions } = await api("GET", agentPath() + "/sessions?limit=100");
  if (load !== loads.sessions) return;
  const list = $("sessions");
  list.textContent = "";
  for (const session of sessions) {
    const button = element("button", "session", `${session.session_id} (${session.message_count})`);
    button.type = "button";
    button.addEventListener("click", () => openSession(session.session_id));
    const item = element("li");
    item.append(button);
    list.append(item);
  }
}

async function openSession(id, seq) {
  $("session").value = id;
  clearAnswer();
  try {
    await loadHistory();
  } catch (error) {
    say(error.message, true);
    return;
  }
  if (seq !== undefined) {  // a search hit: show its message
    const found = $("history").querySelector(`li[data-seq="${Number(seq)}"]`);
    if (found) {
      found.classList.add("found");
      found.scrollIntoView({ block: "center" });
    }
  }
}

async function connect() {
  try {
    const { agents } = await api("GET", "/agents");
    const select = $("agent");
    const previous = select.value;
    select.textContent = "";
    for (const name of agents) select.append(new Option(name, name, false, name === previous));
    if (!agents.length) throw new Error("this token may use no agent here");
    say(`connected: ${agents.length} agent(s)`);
    await loadSessions();
    await loadHistory();
  } catch (error) {
    say(error.message, true);
  }
}

window.addEventListener("DOMContentLoaded", () => {
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("session").value = "web-" + Math.random().toString(36).slice(2, 8);
  $("connect").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
    connect();
  });
  $("agent").addEventListener("change", () => { clearAnswer(); connect(); });
  $("open-session").addEventListener("click", () => openSession($("session").value.trim()));
  $("stop").addEventListener("click", stop);
  $("regenerate").addEventListener("click", regenerate);
  $("search").addEventListener("submit", (event) => {
    event.preventDefault();
    search($("query").value);
  });
  $("send").addEventListener("submit", async (event) => {
    event.preventDefault();
    const message = $("message").value;
    if (busy || !message.trim()) return;
    if (!$("agent").value || !$("session").value.trim()) return say("connect and pick an agent and a session first", true);
    $("message").value = "";
    clearAnswer();
    say("running…");
    await drive("POST", sessionPath() + "/runs", { message });
  });
  connect();
});
