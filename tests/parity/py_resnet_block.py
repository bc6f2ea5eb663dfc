import torch
import torch.nn as nn
import torch.nn.functional as F
from harness import checkpoint


# A ResNet-18-style network as torchvision writes its BasicBlock (conv3x3, BatchNorm2d, ReLU,
# a 1x1 downsample with stride 2), a 7x7 stem with max pooling, adaptive average pooling and a
# linear head: two training steps with SGD, then evaluation under torch.no_grad().
class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes),
            )

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Net(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = BasicBlock(16, 16)
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


torch.manual_seed(2)
model = Net().cuda()
checkpoint("model.cuda()")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
images = torch.randn(8, 3, 64, 64, device="cuda")
labels = torch.randint(0, 10, (8,), device="cuda")
for step in range(2):
    loss = F.cross_entropy(model(images), labels)
    checkpoint(f"step {step} forward")
    loss.backward()
    checkpoint(f"step {step} backward")
    optimizer.step()
    optimizer.zero_grad()
    checkpoint(f"step {step} optimizer")
model.eval()
with torch.no_grad():
    logits = model(images)
checkpoint("evaluation")
