// expect: [0,1,"Green","up"]
enum Color { Red, Green, Blue }
enum Dir { Up = 'up', Down = 'down' }
[Color.Red, Color.Green, Color[1], Dir.Up]
