// expect: ["acct-1",150]
class Account {
  private balance: number = 0;
  constructor(public readonly id: string, initial: number) { this.balance = initial; }
  deposit(amount: number): this { this.balance += amount; return this; }
  get total(): number { return this.balance; }
}
const a = new Account('acct-1', 100).deposit(50);
[a.id, a.total]
