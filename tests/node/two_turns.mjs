// Two turns of one conversation through the official openai npm client; prints what it saw as JSON.
// Usage: node two_turns.mjs BASE_URL TOKEN MODEL
import OpenAI from "openai";

const [baseURL, apiKey, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const conversation = await client.conversations.create({ metadata: { from: "node" } });
const first = await client.responses.create({ model, conversation: conversation.id, input: "my name is Ada" });
const second = await client.responses.create({ model, conversation: conversation.id, input: "what is my name?" });
const items = await client.conversations.items.list(conversation.id, { order: "asc" });
const followed = await client.responses.create({ model, previous_response_id: second.id, input: "and again?" });
console.log(JSON.stringify({
  texts: [first.output_text, second.output_text, followed.output_text],
  items: items.data.map((item) => [item.role, item.content[0].text]),
}));
