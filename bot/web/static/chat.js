// The browser chat: asks /chat/ask and shows the answer as its lines arrive (bot/web/chat.py).
// Text from the server or a document is set as text; only the answer's HTML, which the server rendered
// from Markdown with raw HTML off, is set as HTML.
"use strict";

const log = document.getElementById("log");
const form = document.getElementById("ask");
const question = document.getElementById("question");
const fileInput = document.getElementById("file");
const shots = document.getElementById("shots");
const formError = document.getElementById("form-error");
const send = form.querySelector("button[type=submit]");
const ACCEPTED = ["image/png", "image/jpeg", "image/webp"];
const MAX_IMAGES = 4;

let conversation = newId();
let attached = [];
let busy = false;

function newId() {
  return crypto.randomUUID().replaceAll("-", "");
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function showFormError(text) {
  formError.textContent = text || "";
}

function attach(files) {
  for (const file of files) {
    if (!ACCEPTED.includes(file.type)) {
      showFormError(`${file.name || "That file"}: only PNG, JPEG or WebP screenshots can be sent.`);
      continue;
    }
    if (attached.length >= MAX_IMAGES) {
      showFormError(`At most ${MAX_IMAGES} screenshots per question.`);
      break;
    }
    attached.push(file);
  }
  drawShots();
}

function drawShots() {
  shots.replaceChildren();
  attached.forEach((file, i) => {
    const figure = element("figure");
    const img = element("img");
    img.src = URL.createObjectURL(file);
    img.alt = file.name || "screenshot";
    const remove = element("button", "", "×");
    remove.type = "button";
    remove.title = "Remove this screenshot";
    remove.addEventListener("click", () => {
      attached.splice(i, 1);
      drawShots();
    });
    figure.append(img, remove);
    shots.append(figure);
  });
}

function startTurn(text, files) {
  const turn = element("section", "turn");
  const asked = element("div", "question", text || "(screenshot)");
  for (const file of files) {
    const img = element("img");
    img.src = URL.createObjectURL(file);
    img.alt = file.name || "screenshot";
    asked.append(img);
  }
  const steps = element("ul", "steps");
  const sending = element("li", "in_progress", "Sending the question…");
  sending.dataset.key = "send";
  steps.append(sending);
  const pages = element("div", "pages");
  const streaming = element("div", "streaming");
  const answer = element("div", "answer");
  turn.append(asked, steps, pages, streaming, answer);
  log.append(turn);
  turn.scrollIntoView({ block: "end" });
  return { turn, steps, pages, streaming, answer };
}

function showStep(view, line) {
  const sending = view.steps.querySelector("li[data-key=send]");
  if (sending) sending.remove();
  let item = view.steps.querySelector(`li[data-key="${CSS.escape(line.key)}"]`);
  if (!item) {
    item = element("li");
    item.dataset.key = line.key;
    view.steps.append(item);
  }
  item.className = line.status;
  item.textContent = line.detail ? `${line.title} — ${line.detail}` : line.title;
}

function showPages(view, line) {
  view.pages.replaceChildren();
  for (const page of line.pages) {
    const link = element("a");
    link.href = page.view;
    link.target = "_blank";
    link.rel = "noopener";
    const img = element("img");
    img.src = page.image;
    img.alt = page.label;
    img.loading = "lazy";
    link.append(img, element("span", "", page.label));
    view.pages.append(link);
  }
}

function showAnswer(view, line) {
  view.streaming.remove();
  if (line.interpreted) view.answer.append(element("p", "interpreted", `Understood as: ${line.interpreted}`));
  const body = element("div", "markdown");
  body.innerHTML = line.html; // rendered by the server from Markdown, raw HTML off
  view.answer.append(body);
  if (line.limitations.length) {
    const list = element("ul", "limitations");
    for (const text of line.limitations) list.append(element("li", "", text));
    view.answer.append(list);
  }
  if (line.citations.length) {
    const grid = element("div", "citations");
    for (const c of line.citations) {
      const card = element("figure", "citation");
      const image = c.crop || c.preview;
      if (image) {
        const img = element("img");
        img.src = image;
        img.alt = `${c.label} (${c.crop ? "highlight" : "page"})`;
        if (c.view) {
          const link = element("a");
          link.href = c.view;
          link.target = "_blank";
          link.rel = "noopener";
          link.append(img);
          card.append(link);
        } else {
          card.append(img);
        }
      }
      const caption = element("figcaption");
      const label = c.view ? Object.assign(element("a", "", c.label), { href: c.view, target: "_blank", rel: "noopener" }) : element("span", "", c.label);
      caption.append(label);
      if (c.kind) caption.append(" ", element("span", `kind ${c.kind}`, c.kind === "exact" ? "exact highlight" : "approximate region"));
      if (c.quote) caption.append(element("blockquote", "", `“${c.quote}”`));
      card.append(caption);
      grid.append(card);
    }
    view.answer.append(grid);
  }
  if (line.notes.length) {
    const list = element("ul", "notes");
    for (const text of line.notes) list.append(element("li", "", `⚠️ ${text}`));
    view.answer.append(list);
  }
}

function showError(view, text) {
  const sending = view.steps.querySelector("li[data-key=send]");
  if (sending) sending.remove();
  view.answer.append(element("p", "error", `⚠️ ${text}`));
}

async function ask(text, files) {
  const view = startTurn(text, files);
  const data = new FormData();
  data.append("conversation", conversation);
  data.append("message", newId());
  data.append("question", text);
  for (const file of files) data.append("image", file, file.name || "screenshot.png");
  let response;
  try {
    response = await fetch("/chat/ask", { method: "POST", body: data, headers: { "X-Requested-With": "pixelrag" } });
  } catch (error) {
    showError(view, "pixelrag cannot be reached; is it still running?");
    return;
  }
  if (!response.ok || !response.body) {
    let message = `The question was refused (HTTP ${response.status}).`;
    try {
      message = (await response.json()).message || message;
    } catch (_) { /* not JSON: keep the status */ }
    showError(view, message);
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let answered = false;
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (error) {
      showError(view, "The connection was lost before the answer was complete.");
      return;
    }
    if (chunk.done) break;
    buffered += decoder.decode(chunk.value, { stream: true });
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = JSON.parse(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      if (line.type === "step") showStep(view, line);
      else if (line.type === "pages") showPages(view, line);
      else if (line.type === "text") view.streaming.textContent += line.text;
      else if (line.type === "answer") { showAnswer(view, line); answered = true; }
      else if (line.type === "error") { showError(view, line.message); answered = true; }
    }
  }
  if (!answered) showError(view, "The answer stopped before it was complete.");
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (busy) return;
  const text = question.value.trim();
  if (!text && !attached.length) {
    showFormError("Type a question, or add a screenshot.");
    return;
  }
  showFormError("");
  const files = attached;
  attached = [];
  drawShots();
  question.value = "";
  busy = true;
  send.disabled = true;
  try {
    await ask(text, files);
  } finally {
    busy = false;
    send.disabled = false;
    question.focus();
  }
});

question.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    form.requestSubmit();
  }
});

question.addEventListener("paste", (event) => {
  const files = [...(event.clipboardData?.files || [])];
  if (files.length) {
    event.preventDefault();
    attach(files);
  }
});

fileInput.addEventListener("change", () => {
  attach([...fileInput.files]);
  fileInput.value = "";
});

for (const name of ["dragenter", "dragover"]) {
  document.addEventListener(name, (event) => {
    event.preventDefault();
    form.classList.add("dragging");
  });
}
document.addEventListener("dragleave", () => form.classList.remove("dragging"));
document.addEventListener("drop", (event) => {
  event.preventDefault();
  form.classList.remove("dragging");
  attach([...(event.dataTransfer?.files || [])]);
});

document.getElementById("new").addEventListener("click", () => {
  conversation = newId();
  log.replaceChildren();
  question.focus();
});
