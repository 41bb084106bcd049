// expect: {"id":7,"tags":["a"]}
interface Item { id: number; tags: string[] }
async function fetchItem(id: number): Promise<Item> {
  await new Promise<void>(r => setTimeout(r, 1));
  return { id, tags: ['a'] };
}
const item: Item = await fetchItem(7);
item
